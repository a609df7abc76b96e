// How the element-by-element kernels are launched: a grid-stride loop over at most 65535 × 8 blocks of 256 threads,
// enough to fill any current GPU, with each thread taking every (blocks × 256)-th element after its own.
#pragma once

#include <cstdint>

namespace cuda_plugin {

constexpr int kGridThreads = 256;

inline unsigned grid_blocks(int64_t n) {
  const int64_t b = (n + kGridThreads - 1) / kGridThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b < 65535 * 8 ? b : 65535 * 8));
}

}  // namespace cuda_plugin

#define RAMJET_GRID_STRIDE(i, n)                                                                              \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n);                      \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
