// Copying examples and writing them to bytes (the file cache), independent of which plugin made them.
#pragma once

#include "ramjet/plugin/example.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace ramjet::core {

// A deep copy into host-owned tensors (contiguous), so it outlives the plugin that produced the original.
Example copy_example(const Example& source);

// Bytes in the cache file's record format (see element_cache.cpp), and back. read throws InvalidInput naming
// `where` and the offset on malformed input.
void append_example(std::string& out, const Example& example);
Example read_example(std::string_view bytes, size_t& offset, const std::string& where);

// Total payload bytes of an example's tensors.
size_t example_bytes(const Example& example);

}  // namespace ramjet::core
