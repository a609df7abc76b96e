// Max pooling of one chunk of examples in training, forward (with the argmax of every window) and backward, as
// loops of our own over runs of 16 channels: float32 or bf16, channel-blocked by 16 (nChw16c) or channels-last
// with a multiple of 16 channels, unpadded windows that do not overlap (stride >= kernel).
//
// Why: oneDNN 2.6's pooling kernel ran at 2-3 GB/s on the 2-vCPU Xeon (Sapphire Rapids class, AVX-512, AMX): the
// CNN's two pools, in their convolutions' chunks (chunk_max_pool.hpp), took about a quarter of the float32
// training step and a third of the bf16 one in `perf` (issue 14). A pool is a pass over memory with a compare per
// value; these loops read the input once and write the output and one byte of argmax per output value, and the
// backward writes each input position once (the gradient where the window's maximum was, else zero), with no
// separate pass to zero it.
#pragma once

#include "common.hpp"

#include <optional>

namespace onednn {

// One chunk's pool: the geometry and where a value lies. Value (example n, channel c, row h, column w) is at
// n * example + (c / 16) * group + (h * columns + w) * position + c % 16 elements from the buffer's start, the
// input with its own strides and sizes, the output with its own; the argmax bytes lie as the output's values do
// (out_example bytes an example, padding included).
struct PoolLoops {
  dt type = dt::f32;
  int64_t examples = 0, groups = 0;
  int64_t rows = 0, columns = 0, out_rows = 0, out_columns = 0;
  int64_t kernel_rows = 0, kernel_columns = 0, stride_rows = 0, stride_columns = 0;
  int64_t in_example = 0, in_group = 0, in_position = 0;
  int64_t out_example = 0, out_group = 0, out_position = 0;
  // A relu on the pooled values, in the same pass: what is not positive becomes +0 (NaN and -0 included), and its
  // backward passes the gradient only where the pooled output is positive.
  bool relu = false;
};

// The loops for pooling `src` into `dst` (a chunk's [N, C, H, W] descriptors), or nothing where they do not
// apply: a CPU (or ONEDNN_MAX_CPU_ISA) without AVX-512, another type or layout, padding, overlapping windows, or
// windows of more than 255 values.
std::optional<PoolLoops> max_pool_loops(const md& src, const md& dst, const dnnl::memory::dims& kernel,
                                        const dnnl::memory::dims& strides, const dnnl::memory::dims& pad_l,
                                        const dnnl::memory::dims& pad_r);

// dst = the maximum of each window, argmax = its place in the window (row-major; the first of equal maxima), unless
// argmax is null (inference). On the calling thread.
void max_pool_forward(const PoolLoops& p, const void* src, void* dst, uint8_t* argmax);
// diff_src = diff_dst at each window's argmax, zero elsewhere (positions no window covers included). With a relu,
// `dst` is what forward wrote, and diff_dst counts only where it is positive.
void max_pool_backward(const PoolLoops& p, const void* dst, const void* diff_dst, const uint8_t* argmax,
                       void* diff_src);

}  // namespace onednn
