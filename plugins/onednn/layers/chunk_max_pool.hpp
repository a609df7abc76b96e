// The max_pool that is a chunked convolution's one reader (Plan's conv_max_pool_pairs), run on each chunk by the
// thread that has just convolved it, while the chunk is in that thread's cache.
//
// Why: the CNN's pools and their relus were a quarter of its float32 step (oneDNN's verbose log, batch 128 on the
// 2-vCPU Zen 4: pool forward and backward and the relu's backward over the 26x26x32 map, 2.6 of 14.4 ms), each a
// pass over a map larger than the caches. Pooled chunk by chunk, the convolution's whole output is never written
// to memory (a training plan keeps the pooled map and the argmax positions instead), and backward rebuilds each
// chunk's gradient in the cache just before that chunk's backward-weights and backward-data read it.
//
// A relu on the convolution moves after the pool: relu(max x) = max relu x, the gradient reaches the same
// positions (the argmax, where the maximum is positive), and the relu's passes cover the pooled map only.
#pragma once

#include "../layer.hpp"
#include "../max_pool_loops.hpp"

#include <optional>

namespace onednn {

struct ChunkMaxPool {
  Shape shape;  // the pooled output per example [OH, OW, C]
  // oneDNN's pool: its descriptors choose the pooled layout, and run the pool where `loops` does not.
  dnnl::pooling_forward::primitive_desc forward;
  dnnl::pooling_backward::primitive_desc backward;  // a training plan's
  // Our own loops (max_pool_loops.hpp) where the layouts and the windows suit them: oneDNN's kernel was the slower.
  std::optional<PoolLoops> loops;
  bool relu = false;  // the convolution's relu, run on the pooled chunk (by `loops` where they run the pool)
  // A chunk's argmax positions, kept from forward for backward; empty in inference.
  md workspace_desc() const;
};

// Primitives for one thread that pool a chunk of convolution output laid out as `conv_chunk` (per example
// `conv_shape`, [H, W, C]) as the node `pool` says, then apply a relu if `relu`. Nullopt where that does not suit:
// a pool whose declared shape is not what it computes (the unfused layer says why), a reference kernel, or a
// layout that does not keep the chunk's examples apart.
std::optional<ChunkMaxPool> chunk_max_pool(const NodeSpec& pool, const LayerBuilder& b, const Shape& conv_shape,
                                           const md& conv_chunk, bool relu);

// The relu on a pooled chunk of `bytes` (float32 or bf16, any layout: a blocked layout's zero padding stays zero),
// in place: what is not positive becomes +0, NaN and -0 included, as oneDNN's relu (a max with 0) leaves them. On the calling thread alone; a loop of our own, since oneDNN's
// eltwise primitive took 21 microseconds a call where this takes 12 (the backward, one thread, a chunk of the
// CNN's first pooled map: 16 x 32 x 13 x 13 float32 in cache; 38 in the training step's verbose log).
void relu_in_place(void* data, size_t bytes, dt type);
// Its backward, in place on the pooled chunk's gradient: kept where the relu's output is positive, else 0.
void relu_backward_in_place(const void* relu_out, void* diff, size_t bytes, dt type);

}  // namespace onednn
