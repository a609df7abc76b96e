// Dropout on the GPU, as Keras's: in training each element is kept with probability 1 − rate and scaled by
// 1 / (1 − rate). The mask is a pure function of (seed, element index) through the Philox-4×32-10 counter-based
// generator (cuRAND's device function), so the backward recomputes it instead of storing it, and a step's seed
// gives the same mask on every run.
#pragma once

#include <library_types.h>  // cudaDataType_t
#include <cuda_runtime_api.h>

#include <cstdint>

namespace cuda_plugin {

// The mask's seed: `value`; or, where `step` is given, the step's seed read from device memory as the kernel runs,
// XOR `value` (the layer's salt), so that a launch replayed from a CUDA graph draws the current step's mask.
struct DropoutSeed {
  uint64_t value = 0;
  const uint64_t* step = nullptr;
  DropoutSeed(uint64_t seed) : value(seed) {}  // a seed known when the kernel is launched
  DropoutSeed(const uint64_t* step_seed, uint64_t salt) : value(salt), step(step_seed) {}
};

// y = x · keep(seed, i) / (1 − rate); `rate` in [0, 1).
void dropout_forward(float rate, DropoutSeed seed, const void* x, void* y, int64_t n, cudaDataType_t dtype,
                     cudaStream_t stream);
// dx = dy · keep(seed, i) / (1 − rate): the forward's seed.
void dropout_backward(float rate, DropoutSeed seed, const void* dy, void* dx, int64_t n, cudaDataType_t dtype,
                      cudaStream_t stream);

}  // namespace cuda_plugin
