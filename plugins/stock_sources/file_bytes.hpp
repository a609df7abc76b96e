// Whole-file reads for the stock sources, gunzipping transparently, with errors that name the file and the
// byte offset where the data went wrong.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace stock_sources {

// The file's bytes; gzip input (magic 1f 8b) is decompressed. Throws ramjet::Error (IO or CORRUPT_DATA).
std::vector<uint8_t> read_maybe_gzipped(const std::filesystem::path& path);

}  // namespace stock_sources
