// Whole-file reads for the stock sources, gunzipping transparently, with errors that name the file and the
// byte offset where the data went wrong.
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

// The file's bytes; gzip input (magic 1f 8b) is decompressed. Throws ramjet::Error (IO or CORRUPT_DATA).
Bytes read_maybe_gzipped(const std::filesystem::path& path);

}  // namespace stock_sources
