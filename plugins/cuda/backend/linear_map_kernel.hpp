// The device side of linear_map.hpp: a map's terms as arrays in device memory, and the kernel that applies it to a
// batch — output element (b, row) = Σ weight · source[b][offset] over the row's terms, summed in a fixed order in
// float32 whatever the tensors hold. Enqueued on `stream`.
#pragma once

#include <library_types.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace cuda_plugin {

constexpr int kMaxMapSources = 8;  // a concat of more inputs is refused when the graph is compiled

struct MapTerms {
  const int64_t* row_start;  // rows + 1
  const int32_t* source;
  const int64_t* offset;
  const float* weight;
  int64_t rows;
};

struct MapSources {
  const void* data[kMaxMapSources];
  int64_t elements[kMaxMapSources];  // per example
};

void apply_linear_map(const MapTerms& terms, const MapSources& sources, void* out, int64_t batch,
                      cudaDataType_t dtype, cudaStream_t stream);

}  // namespace cuda_plugin
