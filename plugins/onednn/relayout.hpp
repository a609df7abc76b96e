// Moves one tensor between two memory objects that may differ in layout (and, with bf16, in data type).
#pragma once

#include "exec.hpp"

namespace onednn {

class Relayout {
 public:
  Relayout() = default;
  // With `accumulate`, dst += src instead of dst = src.
  Relayout(const dnnl::memory& src, const dnnl::memory& dst, bool accumulate = false);
  void run(const Exec& exec) const;
  bool is_reorder() const { return kind_ != Kind::none && kind_ != Kind::copy && kind_ != Kind::add; }

 private:
  enum class Kind { none, copy, add, reorder, convert, convert_add };
  Kind kind_ = Kind::none;
  dnnl::memory src_, dst_;
  dnnl::reorder reorder_;
  Args args_;
};

}  // namespace onednn
