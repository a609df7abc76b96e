// A memory object with its own descriptor over another's buffer: how a layer reads a value through another view
// of the same bytes (rows of a sequence, a [T, C] sequence as a one-row image), pointed at the buffer a step uses
// (a value's gradient or its scratch) without allocating.
#pragma once

#include "common.hpp"

namespace onednn {

class Alias {
 public:
  Alias() = default;
  Alias(const md& desc, const dnnl::engine& engine) : mem_(desc, engine, DNNL_MEMORY_NONE) {}
  Alias(const md& desc, const dnnl::engine& engine, const dnnl::memory& over)
      : mem_(desc, engine, over.get_data_handle()) {}
  explicit operator bool() const { return static_cast<bool>(mem_); }
  const dnnl::memory& mem() const { return mem_; }
  // Points the alias at `target`'s buffer and returns it.
  const dnnl::memory& over(const dnnl::memory& target) {
    mem_.set_data_handle(target.get_data_handle());
    return mem_;
  }

 private:
  dnnl::memory mem_;
};

}  // namespace onednn
