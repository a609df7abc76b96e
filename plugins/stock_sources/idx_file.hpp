// IDX files (the MNIST family's format): a big-endian header — two zero bytes, a type code, the number of
// dimensions, then each dimension as uint32 — followed by the values.
#pragma once

#include "file_bytes.hpp"

#include <ramjet/abi.h>

#include <cstdint>
#include <filesystem>
#include <vector>

namespace stock_sources {

struct IdxFile {
  std::filesystem::path path;
  DLDataType dtype{};
  std::vector<int64_t> dims;  // dims[0] is the number of items
  Bytes bytes;                 // the whole decompressed file
  size_t data_offset = 0;      // where the values start in `bytes`
  size_t item_bytes = 0;       // bytes of one item (product of dims[1:] × element size)

  const uint8_t* item(int64_t i) const { return bytes.begin() + data_offset + static_cast<size_t>(i) * item_bytes; }
};

// Throws ramjet::Error (CORRUPT_DATA) naming the file and the byte offset of any problem.
IdxFile read_idx(const std::filesystem::path& path);

}  // namespace stock_sources
