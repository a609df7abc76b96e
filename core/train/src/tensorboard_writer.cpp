#include "ramjet/train/tensorboard_writer.hpp"

#include "ramjet/plugin/failure.hpp"
#include "tensorboard_event.pb.h"

#include <boost/crc.hpp>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace ramjet::core {
namespace {

// What TensorFlow 2's summary writers put in the first record; TensorBoard reads version 2 as "steps may restart
// only where a SessionLog says so", which suits a log that a resumed run continues.
constexpr const char* kFileVersion = "brain.Event:2";
constexpr auto kFlushEvery = std::chrono::seconds(30);

// The n of events.out.tfevents.<secs>.<host>.<pid>.<n>.v2: two files opened in the same second by one process
// (train/ and validation/ are in different folders, but two runs in one test process are not) still differ.
std::atomic<int> file_counter{0};

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

double wall_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
}

}  // namespace

uint32_t masked_crc32c(std::string_view bytes) {
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(bytes.data(), bytes.size());
  const uint32_t c = crc.checksum();
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

struct EventFile::Messages {
  tensorboard::Event event;
};

EventFile::EventFile(const std::filesystem::path& folder) : messages_(std::make_unique<Messages>()) {
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec || !std::filesystem::is_directory(folder))
    throw RuntimeFailure("cannot create the folder " + folder.string() + (ec ? ": " + ec.message() : ""));
  const std::string stem = "events.out.tfevents." + std::to_string(static_cast<int64_t>(wall_time())) + "." +
                           host_name() + "." + std::to_string(getpid()) + ".";
  // "x": never append to or replace another writer's file.
  do {
    path_ = folder / (stem + std::to_string(file_counter++) + ".v2");
    file_.reset(std::fopen(path_.c_str(), "wbx"));
  } while (file_ == nullptr && errno == EEXIST);
  if (file_ == nullptr) throw RuntimeFailure("cannot create " + path_.string() + ": " + std::strerror(errno));
  auto& event = messages_->event;
  event.set_wall_time(wall_time());
  event.set_file_version(kFileVersion);
  write_record();
  flush();
}

EventFile::~EventFile() = default;

void EventFile::scalars(int64_t step, std::string_view prefix, std::span<const Scalar> values) {
  auto& event = messages_->event;
  event.set_wall_time(wall_time());
  event.set_step(step);
  // Reused, not rebuilt: clearing keeps the values and their strings for the next event.
  tensorboard::Summary* summary = event.mutable_summary();
  summary->clear_value();
  for (const Scalar& s : values) {
    tag_.assign(prefix).append(s.tag);
    tensorboard::Summary::Value* v = summary->add_value();
    v->set_tag(tag_);
    v->set_simple_value(static_cast<float>(s.value));
  }
  write_record();
}

// TFRecord framing: length (uint64 LE), its masked CRC-32C, the payload, the payload's masked CRC-32C.
void EventFile::write_record() {
  messages_->event.SerializeToString(&payload_);
  std::string head;
  head.reserve(12);
  put_le(head, payload_.size(), 8);
  put_le(head, masked_crc32c(head), 4);
  std::string tail;
  put_le(tail, masked_crc32c(payload_), 4);
  std::FILE* f = file_.get();
  const bool written = std::fwrite(head.data(), 1, head.size(), f) == head.size() &&
                       std::fwrite(payload_.data(), 1, payload_.size(), f) == payload_.size() &&
                       std::fwrite(tail.data(), 1, tail.size(), f) == tail.size();
  if (!written) throw RuntimeFailure("cannot write to " + path_.string() + ": " + std::strerror(errno));
}

void EventFile::flush() {
  if (std::fflush(file_.get()) != 0) throw RuntimeFailure("cannot write to " + path_.string() + ": " + std::strerror(errno));
}

TensorBoardWriter::TensorBoardWriter(const std::filesystem::path& dir, bool validation)
    : train_(dir / "train"), last_flush_(std::chrono::steady_clock::now()) {
  if (validation) validation_ = std::make_unique<EventFile>(dir / "validation");
}

void TensorBoardWriter::batch(int64_t step, std::span<const Scalar> values) {
  train_.scalars(step, "batch_", values);
  if (std::chrono::steady_clock::now() - last_flush_ >= kFlushEvery) flush();
}

void TensorBoardWriter::epoch(int64_t epoch, std::span<const Scalar> train, std::span<const Scalar> validation) {
  train_.scalars(epoch, "epoch_", train);
  if (validation_ && !validation.empty()) validation_->scalars(epoch, "epoch_", validation);
  flush();
}

void TensorBoardWriter::flush() {
  train_.flush();
  if (validation_) validation_->flush();
  last_flush_ = std::chrono::steady_clock::now();
}

}  // namespace ramjet::core
