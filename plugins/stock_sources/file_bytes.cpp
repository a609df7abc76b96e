#include "file_bytes.hpp"

#include <ramjet/sdk.hpp>

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <algorithm>
#include <fstream>
#include <memory>

namespace stock_sources {
namespace {

// The whole file, in chunks, without zero-filling memory that is about to be overwritten.
class File {
 public:
  explicit File(const std::filesystem::path& path) : path_(path), in_(path, std::ios::binary) {
    if (!in_) throw ramjet::Error(RAMJET_ERR_IO, path.string() + ": cannot open: " + std::strerror(errno));
    in_.seekg(0, std::ios::end);
    size_ = static_cast<size_t>(in_.tellg());
    in_.seekg(0);
  }
  size_t size() const { return size_; }
  size_t read(uint8_t* out, size_t n) {
    in_.read(reinterpret_cast<char*>(out), static_cast<std::streamsize>(n));
    if (in_.bad()) throw ramjet::Error(RAMJET_ERR_IO, path_.string() + ": read failed");
    return static_cast<size_t>(in_.gcount());
  }
  // gzip's trailer holds the uncompressed size modulo 2^32: a good first guess for the output buffer.
  uint32_t gzip_size_hint() {
    if (size_ < 18) return 0;
    uint8_t t[4];
    in_.seekg(static_cast<std::streamoff>(size_ - 4));
    in_.read(reinterpret_cast<char*>(t), 4);
    in_.clear();
    in_.seekg(0);
    return uint32_t(t[0]) | (uint32_t(t[1]) << 8) | (uint32_t(t[2]) << 16) | (uint32_t(t[3]) << 24);
  }

 private:
  std::filesystem::path path_;
  std::ifstream in_;
  size_t size_ = 0;
};

void grow(Bytes& b, size_t capacity) {
  if (capacity <= b.capacity) return;
  std::unique_ptr<uint8_t[]> bigger(new uint8_t[capacity]);  // not zero-filled: it is about to be written
  if (b.size) std::memcpy(bigger.get(), b.data.get(), b.size);
  b.data = std::move(bigger);
  b.capacity = capacity;
}

Bytes gunzip(File& file, const std::filesystem::path& path) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) throw ramjet::Error(RAMJET_ERR_INTERNAL, "zlib init failed");
  struct End {
    z_stream* z;
    ~End() { inflateEnd(z); }
  } end{&z};
  Bytes out;
  // With the trailer's size (exact below 4 GiB) the buffer never grows, so the peak is the data itself.
  grow(out, std::max<size_t>(file.gzip_size_hint(), 1 << 16));
  std::vector<uint8_t> chunk(1 << 16);
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (z.avail_in == 0) {
      const size_t n = file.read(chunk.data(), chunk.size());
      if (n == 0)
        throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, path.string() + ": gzip stream truncated at compressed byte " +
                                                         std::to_string(z.total_in) +
                                                         " (the file ends before the stream does)");
      z.next_in = chunk.data();
      z.avail_in = static_cast<uInt>(n);
    }
    if (out.size == out.capacity) grow(out, out.capacity * 2);
    z.next_out = out.data.get() + out.size;
    z.avail_out = static_cast<uInt>(std::min<size_t>(out.capacity - out.size, 1u << 30));
    const uInt before = z.avail_out;
    rc = inflate(&z, Z_NO_FLUSH);
    out.size += before - z.avail_out;
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
      const std::string why = z.msg ? z.msg : "error " + std::to_string(rc);
      throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, path.string() + ": corrupt gzip data near compressed byte " +
                                                       std::to_string(z.total_in) + ": " + why);
    }
  }
  return out;
}

}  // namespace

Bytes read_maybe_gzipped(const std::filesystem::path& path) {
  File file(path);
  uint8_t magic[2] = {0, 0};
  const size_t got = file.read(magic, 2);
  File again(path);  // start from byte 0 whichever way we read
  if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) return gunzip(again, path);
  Bytes bytes;
  grow(bytes, std::max<size_t>(again.size(), 1));
  bytes.size = again.read(bytes.data.get(), again.size());
  if (bytes.size != again.size()) throw ramjet::Error(RAMJET_ERR_IO, path.string() + ": read failed");
  return bytes;
}

}  // namespace stock_sources
