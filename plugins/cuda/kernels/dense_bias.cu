#include "cuda_check.hpp"
#include "dense.hpp"
#include "float_access.cuh"

#include <cuda_fp16.h>

namespace cuda_plugin {
namespace {

// One thread per column: neighbouring threads read neighbouring addresses of each row.
template <class T>
__global__ void column_sums_kernel(const T* dy, T* db, int64_t m, int64_t n) {
  const int64_t column = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (column >= n) return;
  float sum = 0.0f;
  for (int64_t row = 0; row < m; ++row) sum += load(dy, row * n + column);
  store(db, column, sum);
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
