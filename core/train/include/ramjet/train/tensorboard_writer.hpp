// TensorBoard event files for `train.tensorboard`, laid out as Keras's TensorBoard callback lays them out:
// DIR/train/ and DIR/validation/, each run adding a new events.out.tfevents.<secs>.<host>.<pid>.<n>.v2 file (a
// resumed run too: TensorBoard reads a folder's files in name order, so the steps continue). A file is TFRecord
// framing around Event protos (tensorboard_event.proto), the first naming the file version, the others carrying
// scalar summaries (`simple_value`), which TensorBoard shows as scalars.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace ramjet::core {

// TFRecord's checksum of `bytes`: CRC-32C, rotated and offset so that a checksum of checksums stays useful.
uint32_t masked_crc32c(std::string_view bytes);

struct Scalar {
  std::string_view tag;
  double value;  // written as float, as TensorBoard's simple_value is
};

// One event file, new at construction: every write is one whole record, so a run that fails leaves every record it
// completed readable. Writes are buffered; flush() hands them to the operating system.
class EventFile {
 public:
  // Creates `folder` and a file of its own in it. Throws RuntimeFailure naming the path when it cannot.
  explicit EventFile(const std::filesystem::path& folder);
  ~EventFile();
  EventFile(const EventFile&) = delete;
  EventFile& operator=(const EventFile&) = delete;

  // One Event at `step` with one summary value per scalar, each tag prefixed with `prefix`.
  void scalars(int64_t step, std::string_view prefix, std::span<const Scalar> values);
  void flush();
  const std::filesystem::path& path() const { return path_; }

 private:
  struct Messages;  // the protobuf messages, kept between events so a steady stream of them allocates nothing
  void write_record();
  std::filesystem::path path_;
  struct CloseFile {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::unique_ptr<std::FILE, CloseFile> file_;
  std::unique_ptr<Messages> messages_;
  std::string payload_, tag_;
};

// The trainer's TensorBoard log: per optimizer step in train/ ("batch_" tags, step = global step), per epoch in
// train/ and validation/ ("epoch_" tags, step = the epoch's number, 1-based as in the report's history).
class TensorBoardWriter {
 public:
  // Opens train/ (and validation/ when the run evaluates) under `dir`. Throws RuntimeFailure naming the path.
  TensorBoardWriter(const std::filesystem::path& dir, bool validation);

  // Flushed every 30 s at most, so a long epoch shows up while it runs.
  void batch(int64_t step, std::span<const Scalar> values);
  // Writes the epoch's scalars and flushes both files: what TensorBoard shows is never more than an epoch behind.
  void epoch(int64_t epoch, std::span<const Scalar> train, std::span<const Scalar> validation);
  void flush();

 private:
  EventFile train_;
  std::unique_ptr<EventFile> validation_;
  std::chrono::steady_clock::time_point last_flush_;
};

}  // namespace ramjet::core
