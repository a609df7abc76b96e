// Sequential reading of a data file, gunzipping transparently, with errors that name the file and the byte offset
// where the data went wrong. Reading is on demand so that a reader judges a header before it decides how much to
// read: nothing is inflated past what is asked for (a small gzip can inflate to gigabytes).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>

namespace stock_sources {

// An owned byte array that is never zero-filled (datasets are large; the bytes are overwritten anyway).
struct Bytes {
  std::unique_ptr<uint8_t[]> data;
  size_t size = 0;
  size_t capacity = 0;
  const uint8_t* begin() const { return data.get(); }
  uint8_t* begin() { return data.get(); }
};

// Makes room for `capacity` bytes, keeping the first `size`. Throws ramjet::Error (OUT_OF_MEMORY) naming `what`.
void reserve_bytes(Bytes& bytes, size_t capacity, const std::string& what);

class ByteReader {
 public:
  // Opens a regular file (a FIFO, device or directory is refused: it could block or never end). gzip input
  // (magic 1f 8b, one or more members) is decompressed. Throws ramjet::Error (IO).
  explicit ByteReader(const std::filesystem::path& path);
  ~ByteReader();
  ByteReader(const ByteReader&) = delete;
  ByteReader& operator=(const ByteReader&) = delete;

  // Up to `count` bytes; fewer only at the end of the (decompressed) data. Throws ramjet::Error (CORRUPT_DATA)
  // naming the compressed byte where a gzip stream is corrupt or truncated, IO for a failed read.
  size_t read(uint8_t* out, size_t count);

  bool gzipped() const { return gzipped_; }
  uint64_t file_size() const { return file_size_; }  // on disk
  uint64_t position() const { return position_; }    // bytes returned so far (after decompression)

 private:
  struct Inflater;
  size_t read_file(uint8_t* out, size_t count);
  size_t inflate_into(uint8_t* out, size_t count);

  std::filesystem::path path_;
  int fd_ = -1;
  uint64_t file_size_ = 0;
  uint64_t position_ = 0;
  bool gzipped_ = false;
  std::unique_ptr<Inflater> inflater_;
};

// How many bytes a file may declare for its decoded contents: the machine's physical memory, or the process's
// address-space limit when that is lower. A header that declares more is refused before anything is read.
uint64_t declared_size_limit();

}  // namespace stock_sources
