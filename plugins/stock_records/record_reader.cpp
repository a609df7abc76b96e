#include "record_reader.hpp"

#include "crc32c.hpp"

#include <ramjet/sdk.hpp>

#include <sys/stat.h>

#include <cerrno>
#include <cinttypes>
#include <cstring>

namespace stock_records {
namespace {

uint64_t load_le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::string hex32(uint32_t v) {
  char s[11];
  std::snprintf(s, sizeof s, "0x%08" PRIx32, v);
  return s;
}

}  // namespace

RecordReader::RecordReader(std::filesystem::path path, uint64_t offset)
    : path_(std::move(path)), file_(std::fopen(path_.c_str(), "rb")) {
  if (!file_) throw ramjet::Error(RAMJET_ERR_IO, path_.string() + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (fstat(fileno(file_.get()), &st) != 0)
    throw ramjet::Error(RAMJET_ERR_IO, path_.string() + ": cannot stat: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw ramjet::Error(RAMJET_ERR_IO, path_.string() + ": not a regular file");
  size_ = static_cast<uint64_t>(st.st_size);
  std::setvbuf(file_.get(), nullptr, _IOFBF, 1 << 18);
  if (offset > size_)
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, path_.string() + ": cannot resume at byte " +
                                                         std::to_string(offset) + ", the file has " +
                                                         std::to_string(size_) + " bytes");
  seek(offset);
}

void RecordReader::seek(uint64_t offset) {
  if (fseeko(file_.get(), static_cast<off_t>(offset), SEEK_SET) != 0)
    throw ramjet::Error(RAMJET_ERR_IO, path_.string() + ": cannot seek to byte " + std::to_string(offset) + ": " +
                                           std::strerror(errno));
  offset_ = offset;
}

void RecordReader::corrupt(const std::string& why) const {
  throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA,
                      path_.string() + ": TFRecord at byte " + std::to_string(offset_) + ": " + why);
}

void RecordReader::read_exactly(void* out, size_t count) {
  if (count > 0 && std::fread(out, 1, count, file_.get()) != count) {
    const int error = std::ferror(file_.get()) ? errno : 0;
    seek(offset_);  // stay at the record's start
    throw ramjet::Error(RAMJET_ERR_IO, path_.string() + ": TFRecord at byte " + std::to_string(offset_) +
                                           ": read failed" + (error ? std::string(": ") + std::strerror(error)
                                                                    : std::string(" (the file shrank)")));
  }
}

bool RecordReader::read(std::string& data) {
  if (offset_ == size_) return false;
  const uint64_t left = size_ - offset_;
  if (left < 12)
    corrupt("truncated: the file ends at byte " + std::to_string(size_) + ", inside the 12-byte record header");
  uint8_t header[12];
  read_exactly(header, sizeof header);
  const uint64_t length = load_le(header, 8);
  const auto stored_length_crc = static_cast<uint32_t>(load_le(header + 8, 4));
  const uint32_t length_crc = masked_crc32c(header, 8);
  if (length_crc != stored_length_crc) {
    seek(offset_);
    corrupt("length CRC mismatch (stored " + hex32(stored_length_crc) + ", computed " + hex32(length_crc) +
            "): the header is damaged");
  }
  if (length > kMaxRecordBytes) {
    seek(offset_);
    corrupt("the length field (bytes 0-7) declares " + std::to_string(length) + " data bytes, more than the " +
            std::to_string(kMaxRecordBytes >> 20) + " MiB a record may hold");
  }
  if (left - 12 < 4 || length > left - 16) {
    seek(offset_);
    corrupt("truncated: the record declares " + std::to_string(length) + " data bytes but the file ends at byte " +
            std::to_string(size_));
  }
  data.resize(static_cast<size_t>(length));
  read_exactly(data.data(), data.size());
  uint8_t footer[4];
  read_exactly(footer, sizeof footer);
  const auto stored_data_crc = static_cast<uint32_t>(load_le(footer, 4));
  const uint32_t data_crc = masked_crc32c(data.data(), data.size());
  if (data_crc != stored_data_crc) {
    seek(offset_);
    corrupt("data CRC mismatch (stored " + hex32(stored_data_crc) + ", computed " + hex32(data_crc) + ") over " +
            std::to_string(length) + " data bytes");
  }
  offset_ += 16 + length;
  return true;
}

}  // namespace stock_records
