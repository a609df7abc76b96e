// The address range every plan of one program places its per-step buffers in: values, their gradients, reordered
// inputs, workspaces and the scratchpad. Each plan starts at the beginning of the range, so the plans of one
// program (the training batch, a smaller last batch, the evaluation batch) overlap: they never run at the same
// time (a step's forward and backward use one plan; any other plan's forward ends that step), and the memory they
// cost together is the largest one's, not the sum. The range is reserved, not committed: a page costs memory only
// once written.
//
// Buffers that must survive from one step to the next (weights in a primitive's layout, constants a layer fills
// once) are not placed here; they stay their own allocations.
#pragma once

#include "common.hpp"

#include <cstddef>

namespace onednn {

class Arena {
 public:
  // Reserves address space for the largest plan this machine could hold. When the reservation is refused (or
  // under AddressSanitizer, which checks each buffer's bounds only when it is its own allocation), every buffer
  // is allocated on its own instead.
  Arena();
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  bool shared() const { return base_ != nullptr; }
  char* base() const { return base_; }
  size_t reserved() const { return reserved_; }

 private:
  char* base_ = nullptr;
  size_t reserved_ = 0;
};

// One plan's placement in the arena: buffers follow one another from the start of the range.
class ArenaCursor {
 public:
  ArenaCursor(Arena& arena, const dnnl::engine& engine) : arena_(arena), engine_(engine) {}

  // A buffer for `desc`, valid while the arena lives; the plan that asked owns what it writes there only for the
  // step it runs. Falls back to its own allocation when the arena is not shared or is full.
  dnnl::memory place(const md& desc);
  // Bytes this plan placed in the arena (what it costs in resident memory at most).
  size_t used() const { return used_; }

 private:
  Arena& arena_;
  const dnnl::engine& engine_;
  size_t used_ = 0;
};

}  // namespace onednn
