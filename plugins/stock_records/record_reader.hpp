// TFRecord framing, one file at a time:
//   uint64 length (little-endian) | uint32 masked CRC-32C of those 8 bytes | data | uint32 masked CRC-32C of data
// Both checksums are verified. Errors name the file and the byte offset where the failing record starts.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

namespace stock_records {

// The largest record accepted: far above an encoded image or a raw tensor, and it bounds what one record costs
// in memory (protobuf's parse of it included) whatever the length field says.
inline constexpr uint64_t kMaxRecordBytes = uint64_t{256} << 20;

class RecordReader {
 public:
  // Opens `path` and positions it at `offset` (a record boundary). Throws ramjet::Error (IO, or INVALID_ARGUMENT
  // for an offset past the end).
  RecordReader(std::filesystem::path path, uint64_t offset);

  // Reads the next record's data into `data`; false at a clean end of file. Throws RAMJET_ERR_CORRUPT_DATA for a
  // checksum mismatch or a record cut short by the end of the file; the position then stays at that record.
  bool read(std::string& data);

  uint64_t offset() const { return offset_; }  // where the next record starts
  void seek(uint64_t offset);                  // back to a record boundary read before
  const std::filesystem::path& path() const { return path_; }
  uint64_t size() const { return size_; }

 private:
  [[noreturn]] void corrupt(const std::string& why) const;
  void read_exactly(void* out, size_t count);

  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::filesystem::path path_;
  std::unique_ptr<std::FILE, Closer> file_;
  uint64_t size_ = 0;
  uint64_t offset_ = 0;
};

}  // namespace stock_records
