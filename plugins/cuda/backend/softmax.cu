#include "softmax.hpp"

#include "cuda_check.hpp"
#include "float_access.cuh"
#include "grid.cuh"

#include <cmath>

namespace cuda_plugin {
namespace {

// A thread per row: the rows softmax sees here (classes, an attention's keys) are short.
template <class T>
__global__ void softmax_forward_kernel(const T* x, T* y, int64_t rows, int64_t width, int64_t causal_period) {
  RAMJET_GRID_STRIDE(r, rows) {
    const int64_t base = r * width;
    const int64_t kept = causal_period > 0 ? r % causal_period + 1 : width;
    float top = -INFINITY;
    for (int64_t j = 0; j < kept; ++j) top = fmaxf(top, load(x, base + j));
    float sum = 0.0f;
    for (int64_t j = 0; j < kept; ++j) sum += expf(load(x, base + j) - top);
    for (int64_t j = 0; j < width; ++j) store(y, base + j, j < kept ? expf(load(x, base + j) - top) / sum : 0.0f);
  }
}

template <class T>
__global__ void softmax_backward_kernel(const T* y, const T* dy, T* dx, int64_t rows, int64_t width) {
  RAMJET_GRID_STRIDE(r, rows) {
    const int64_t base = r * width;
    float dot = 0.0f;
    for (int64_t j = 0; j < width; ++j) dot += load(dy, base + j) * load(y, base + j);
    for (int64_t j = 0; j < width; ++j) store(dx, base + j, load(y, base + j) * (load(dy, base + j) - dot));
  }
}

}  // namespace

void softmax_forward(const void* x, void* y, int64_t rows, int64_t width, cudaDataType_t dtype, cudaStream_t stream,
                     int64_t causal_period) {
  if (rows == 0) return;
  if (dtype == CUDA_R_16F)
    softmax_forward_kernel<<<grid_blocks(rows), kGridThreads, 0, stream>>>(
        static_cast<const __half*>(x), static_cast<__half*>(y), rows, width, causal_period);
  else
    softmax_forward_kernel<<<grid_blocks(rows), kGridThreads, 0, stream>>>(
        static_cast<const float*>(x), static_cast<float*>(y), rows, width, causal_period);
  check(cudaGetLastError(), "softmax kernel launch");
}

void softmax_backward(const void* y, const void* dy, void* dx, int64_t rows, int64_t width, cudaDataType_t dtype,
                      cudaStream_t stream) {
  if (rows == 0) return;
  if (dtype == CUDA_R_16F)
    softmax_backward_kernel<<<grid_blocks(rows), kGridThreads, 0, stream>>>(
        static_cast<const __half*>(y), static_cast<const __half*>(dy), static_cast<__half*>(dx), rows, width);
  else
    softmax_backward_kernel<<<grid_blocks(rows), kGridThreads, 0, stream>>>(
        static_cast<const float*>(y), static_cast<const float*>(dy), static_cast<float*>(dx), rows, width);
  check(cudaGetLastError(), "softmax gradient kernel launch");
}

}  // namespace cuda_plugin
