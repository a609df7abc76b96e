#include "linear_map_kernel.hpp"

#include "cuda_check.hpp"
#include "float_access.cuh"
#include "grid.cuh"

namespace cuda_plugin {
namespace {

template <class T>
__global__ void linear_map_kernel(MapTerms m, MapSources in, T* out, int64_t n) {
  RAMJET_GRID_STRIDE(i, n) {
    const int64_t row = i % m.rows, b = i / m.rows;
    float sum = 0.0f;
    for (int64_t k = m.row_start[row]; k < m.row_start[row + 1]; ++k) {
      const int s = m.source[k];
      sum += m.weight[k] * load(static_cast<const T*>(in.data[s]), b * in.elements[s] + m.offset[k]);
    }
    store(out, i, sum);
  }
}

}  // namespace

void apply_linear_map(const MapTerms& terms, const MapSources& sources, void* out, int64_t batch,
                      cudaDataType_t dtype, cudaStream_t stream) {
  const int64_t n = batch * terms.rows;
  if (n == 0) return;
  if (dtype == CUDA_R_16F)
    linear_map_kernel<<<grid_blocks(n), kGridThreads, 0, stream>>>(terms, sources, static_cast<__half*>(out), n);
  else
    linear_map_kernel<<<grid_blocks(n), kGridThreads, 0, stream>>>(terms, sources, static_cast<float*>(out), n);
  check(cudaGetLastError(), "linear map kernel launch");
}

}  // namespace cuda_plugin
