#include "cuda_check.hpp"
#include "dense.hpp"

#include <cuda_fp16.h>

namespace cuda_plugin {
namespace {

template <class T>
__device__ float as_float(T v) {
  return static_cast<float>(v);
}
template <>
__device__ float as_float<__half>(__half v) {
  return __half2float(v);
}
template <class T>
__device__ T from_float(float v) {
  return static_cast<T>(v);
}
template <>
__device__ __half from_float<__half>(float v) {
  return __float2half(v);
}

// One thread per column: neighbouring threads read neighbouring addresses of each row.
template <class T>
__global__ void column_sums_kernel(const T* dy, T* db, int64_t m, int64_t n) {
  const int64_t column = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (column >= n) return;
  float sum = 0.0f;
  for (int64_t row = 0; row < m; ++row) sum += as_float(dy[row * n + column]);
  db[column] = from_float<T>(sum);
}

}  // namespace

void column_sums(const void* dy, void* db, int64_t m, int64_t n, cudaDataType_t dtype, cudaStream_t stream) {
  const int threads = 256;
  const unsigned blocks = static_cast<unsigned>((n + threads - 1) / threads);
  if (dtype == CUDA_R_16F)
    column_sums_kernel<<<blocks, threads, 0, stream>>>(static_cast<const __half*>(dy), static_cast<__half*>(db), m, n);
  else
    column_sums_kernel<<<blocks, threads, 0, stream>>>(static_cast<const float*>(dy), static_cast<float*>(db), m, n);
  check(cudaGetLastError(), "bias gradient kernel launch");
}

}  // namespace cuda_plugin
