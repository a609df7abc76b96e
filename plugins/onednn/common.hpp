// Types and small helpers every file of the oneDNN backend uses.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <ramjet/sdk.hpp>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace onednn {

using Shape = std::vector<int64_t>;  // per-example, channels last, as the graph IR writes it
using Args = std::unordered_map<int, dnnl::memory>;
using md = dnnl::memory::desc;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

[[noreturn]] inline void fail(ramjet_status status, const std::string& message) {
  throw ramjet::Error(status, message);
}

inline int64_t product(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

inline std::string shape_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Floats a memory object holds, padding of blocked layouts included.
inline size_t float_count(const dnnl::memory& m) { return m.get_desc().get_size() / sizeof(float); }
inline float* floats(const dnnl::memory& m) { return static_cast<float*>(m.get_data_handle()); }

}  // namespace onednn
