// data_source "tfrecord": tf.train.Example records from TFRecord files, read in order (a sequential source).
//
// Config: files (a path, a glob pattern, or an array of either; relative to the manifest's directory; globs are
//           expanded in sorted order),
//         features: {"<name>": {"type": "bytes" | "int64" | "float", "shape": [...], "dtype": "..."}, ...}
// Each declared feature must be present in every record. Output per feature:
//   bytes: exactly one value. Without "shape": uint8 [N] (e.g. an encoded image for decode_image). With "shape"
//          the bytes are reinterpreted as "dtype" (uint8 default, little-endian) in that shape, like
//          tf.io.decode_raw + reshape.
//   int64: int64 (or "dtype": int32, int16, int8, uint8, float32, float64; integers must fit).
//   float: float32 (or "dtype": float64).
//   "shape" fixes the value count (scalar for [], one dimension may be -1 and is inferred); without it the
//   output is 1-D with as many values as the record holds.
// State: file index + byte offset of the next record (save_state / restore_state), so a run resumes mid-file.
#pragma once

#include "record_reader.hpp"

#include <ramjet/sdk.hpp>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ramjet::tfexample {
class Example;
}

namespace stock_records {

class TFRecordSource {
 public:
  static ramjet::Fields fields();
  static void check(const nlohmann::json& config, ramjet::Problems& problems);
  static void check_files(const ramjet::Config& config, ramjet::Problems& problems);  // files and patterns match  // each entry of "features"
  explicit TFRecordSource(const ramjet::Config& config);
  ~TFRecordSource();

  nlohmann::json element_spec() const;
  bool next(ramjet::Example& out);
  void reset(uint64_t epoch);
  std::string save_state() const;
  void restore_state(std::string_view state);

  enum class Kind { bytes, int64, float32 };
  struct FeatureSpec {
    std::string name;
    Kind kind;
    std::optional<std::vector<int64_t>> shape;  // -1 marks the one inferred dimension
    DLDataType dtype;
  };

 private:
  void emit(uint64_t record_offset, ramjet::Example& out);

  std::vector<std::filesystem::path> files_;
  std::vector<FeatureSpec> features_;
  size_t file_index_ = 0;
  uint64_t offset_ = 0;                  // where reading resumes when no file is open
  std::unique_ptr<RecordReader> reader_;  // the open file (files_[file_index_]), if any
  std::string record_;
  std::unique_ptr<ramjet::tfexample::Example> example_;  // parsed message, reused between records
};

}  // namespace stock_records
