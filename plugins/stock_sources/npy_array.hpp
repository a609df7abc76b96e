// One named array read from .npy bytes — a .npy file read example by example, or a member inflated from an .npz
// archive — and the tensors of its examples. Only the header is judged when it is opened; the values are read when
// an example is asked for, so a large file costs no reading up front.
#pragma once

#include "file_bytes.hpp"
#include "npy_format.hpp"

#include <ramjet/sdk.hpp>

#include <filesystem>
#include <memory>
#include <string>

namespace stock_sources {

// An open .npy file, read with pread(2) from any thread. Not a mapping: a file that shrinks after it was opened
// (another process rewriting it) must become an error naming the byte, not a SIGBUS.
class NpyFile {
 public:
  NpyFile(int fd, std::string name, size_t size) : fd_(fd), name_(std::move(name)), size_(size) {}
  ~NpyFile();
  NpyFile(const NpyFile&) = delete;
  NpyFile& operator=(const NpyFile&) = delete;
  // Exactly `count` bytes from `offset`. Throws ramjet::Error (CORRUPT_DATA) naming the byte where the file now
  // ends, IO for a failed read.
  void read(size_t offset, uint8_t* out, size_t count) const;

 private:
  int fd_;
  std::string name_;
  size_t size_;  // when opened
};

struct NpyArray {
  std::string name;  // for errors: the file, or "archive.npz:member.npy"
  NpyHeader header;
  const uint8_t* values = nullptr;    // in memory (an .npz member): the first example's first value
  std::shared_ptr<const void> owner;  // keeps `values` alive (the inflated bytes)
  std::shared_ptr<const NpyFile> file;  // on disk (a .npy file): where the values are read from instead

  int64_t count() const { return header.shape[0]; }
  std::vector<int64_t> example_shape() const { return {header.shape.begin() + 1, header.shape.end()}; }
  // Example `index` as a tensor of header.output. int64 values outside int32 and finite float64 values beyond
  // float32 are refused (CORRUPT_DATA, naming the file, the example and the byte), never wrapped or made inf.
  ramjet::Tensor example(int64_t index) const;

 private:
  void copy_stored(int64_t index, uint8_t* out) const;  // example `index`'s bytes as stored
};

// Opens a .npy file and judges its header and length (exactly data_offset + data_bytes bytes). Throws
// ramjet::Error: IO when it cannot be opened, CORRUPT_DATA naming the file and the byte otherwise.
NpyArray open_npy(const std::filesystem::path& path);

// The same judgement over bytes held in memory (an .npz member); `bytes` becomes the array's owner.
NpyArray npy_from_bytes(Bytes bytes, const std::string& name);

}  // namespace stock_sources
