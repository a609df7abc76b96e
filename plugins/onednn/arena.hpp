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
#include <map>
#include <vector>

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

// One plan's placement in the arena. Blocks are placed from the start of the range; a block released (its
// contents will not be read again in any step of this plan) is placed again, first fit, so buffers whose
// lifetimes do not overlap share memory. The plan decides the lifetimes (plan.cpp).
class ArenaCursor {
 public:
  // Which half of a training step reads a block: values and what forward writes are read again by backward;
  // gradients live only from the backward step that writes them to the one that reads them.
  enum class Side { forward, backward };
  struct Placed {
    size_t block;  // its offset, which names it
    Side side;
  };

  // Only blocks of side `reused` are released and placed again: in a training plan, a gradient's memory must
  // never become a value's, which a second backward over the same forward (scaled, accumulated) reads again.
  ArenaCursor(Arena& arena, const dnnl::engine& engine, Side reused) : arena_(arena), engine_(engine), reused_(reused) {}

  // A buffer for `desc`, valid while the arena lives; the plan that asked owns what it writes there only for the
  // step it runs. Falls back to its own allocation when the arena is not shared or is full.
  dnnl::memory place(const md& desc, Side side);
  // Above every block placed so far, never reused: for what every step uses (the scratchpad).
  dnnl::memory place_apart(const md& desc);
  // The blocks placed since the last call.
  std::vector<Placed> take_recent();
  // The block holding `data`, if it lies in the arena.
  bool block_of(const void* data, size_t& block) const;
  // `block` (of the reused side) may be placed again.
  void release(size_t block);
  Side reused() const { return reused_; }
  // Bytes of the arena this plan spans (what it costs in resident memory at most).
  size_t used() const { return used_; }

 private:
  Arena& arena_;
  const dnnl::engine& engine_;
  Side reused_;
  size_t used_ = 0;
  std::map<size_t, size_t> placed_;  // offset -> size, blocks in use
  std::map<size_t, size_t> free_;    // offset -> size, below used_, merged with their neighbours
  std::vector<Placed> recent_;
};

}  // namespace onednn
