// safetensors files (the format Hugging Face defined and PyTorch, JAX and TensorFlow users read): an 8-byte
// little-endian header length, a JSON header naming each tensor's dtype, shape and byte range, string metadata
// under "__metadata__", then the raw little-endian data.
#pragma once

#include "ramjet/plugin/example.hpp"
#include "ramjet/plugin/failure.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace ramjet::core {

struct TensorFile {
  Example tensors;
  std::map<std::string, std::string> metadata;
};

// Bounds a reader keeps to whatever a file declares. The header cap is the safetensors format's own.
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;
inline constexpr int kMaxTensorRank = 16;
inline constexpr int kMaxJsonDepth = 64;
inline constexpr uint64_t kMaxJsonValues = 1u << 20;  // keeps the parsed header's memory near the text's size

// Written atomically. Throws InvalidInput for tensors safetensors cannot hold (non-CPU, vector dtypes).
void write_safetensors(const std::filesystem::path& path, const Example& tensors,
                       const std::map<std::string, std::string>& metadata);

// Refuses anything but a regular file (a FIFO is never opened, so it cannot hang the reader), and checks the
// whole header — its length against the file and the format's cap before allocating, every field's type, ranks,
// shape products and byte ranges (overflow-checked, inside the data, neither overlapping nor leaving holes) and
// duplicate names — before reading any tensor. Throws InvalidInput naming the file and the byte offset or tensor.
TensorFile read_safetensors(const std::filesystem::path& path);

// JSON text parsed with bounds on nesting depth and on the number of values, and duplicate object keys refused.
// `fail(offset, what)` makes the exception to throw; offsets are `base` plus the byte within `text`.
using JsonFailure = std::function<InvalidInput(uint64_t offset, const std::string& what)>;
nlohmann::json parse_bounded_json(std::string_view text, uint64_t base, const JsonFailure& fail);

// At most `limit` bytes of `text` for a message, marked when cut, so a hostile name never floods the terminal.
std::string shortened(std::string_view text, size_t limit = 80);

}  // namespace ramjet::core
