// Types and small helpers every file of the oneDNN backend uses.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <ramjet/sdk.hpp>
#include <ramjet/sdk/graph_ir.hpp>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace onednn {

using Shape = ramjet::ir::Shape;  // per-example, channels last, as the graph IR writes it
using Args = std::unordered_map<int, dnnl::memory>;
using md = dnnl::memory::desc;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

[[noreturn]] inline void fail(ramjet_status status, const std::string& message) {
  throw ramjet::Error(status, message);
}

using ramjet::ir::product;
using ramjet::ir::shape_string;

// Floats a memory object holds, padding of blocked layouts included.
inline size_t float_count(const dnnl::memory& m) { return m.get_desc().get_size() / sizeof(float); }
inline float* floats(const dnnl::memory& m) { return static_cast<float*>(m.get_data_handle()); }

}  // namespace onednn
