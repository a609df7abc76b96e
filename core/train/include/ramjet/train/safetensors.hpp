// safetensors files (the format Hugging Face defined and PyTorch, JAX and TensorFlow users read): an 8-byte
// little-endian header length, a JSON header naming each tensor's dtype, shape and byte range, string metadata
// under "__metadata__", then the raw little-endian data.
#pragma once

#include "ramjet/plugin/example.hpp"

#include <filesystem>
#include <map>
#include <string>

namespace ramjet::core {

struct TensorFile {
  Example tensors;
  std::map<std::string, std::string> metadata;
};

// Written atomically. Throws InvalidInput for tensors safetensors cannot hold (non-CPU, vector dtypes).
void write_safetensors(const std::filesystem::path& path, const Example& tensors,
                       const std::map<std::string, std::string>& metadata);

// Throws InvalidInput naming the file and the byte offset of anything malformed.
TensorFile read_safetensors(const std::filesystem::path& path);

}  // namespace ramjet::core
