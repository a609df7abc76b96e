// Dropout on the GPU, as Keras's: in training each element is kept with probability 1 − rate and scaled by
// 1 / (1 − rate). The mask is a pure function of (seed, element index) through the Philox-4×32-10 counter-based
// generator (cuRAND's device function), so the backward recomputes it instead of storing it, and a step's seed
// gives the same mask on every run.
#pragma once

#include <library_types.h>  // cudaDataType_t
#include <cuda_runtime_api.h>

#include <cstdint>

namespace cuda_plugin {

// y = x · keep(seed, i) / (1 − rate); `rate` in [0, 1).
void dropout_forward(float rate, uint64_t seed, const void* x, void* y, int64_t n, cudaDataType_t dtype,
                     cudaStream_t stream);
// dx = dy · keep(seed, i) / (1 − rate): the forward's seed.
void dropout_backward(float rate, uint64_t seed, const void* dy, void* dx, int64_t n, cudaDataType_t dtype,
                      cudaStream_t stream);

}  // namespace cuda_plugin
