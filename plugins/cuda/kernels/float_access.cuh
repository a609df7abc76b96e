// Reading and writing float32 or float16 elements as float in device code: the kernels compute in float32 whatever
// the tensors hold.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

namespace cuda_plugin {

__device__ inline float load(const float* p, int64_t i) { return p[i]; }
__device__ inline float load(const __half* p, int64_t i) { return __half2float(p[i]); }
__device__ inline void store(float* p, int64_t i, float v) { p[i] = v; }
__device__ inline void store(__half* p, int64_t i, float v) { p[i] = __float2half(v); }

}  // namespace cuda_plugin
