#include "cuda_check.hpp"
#include "float_access.cuh"
#include "dropout.hpp"

#include <ramjet/sdk/error.hpp>

#include <cuda_fp16.h>
#include <curand_philox4x32_x.h>

namespace cuda_plugin {
namespace {

// Element i's uniform number in [0, 1): Philox of the counter (i, 0) under the key `seed`, 24 bits of it.
__device__ float uniform(uint64_t seed, int64_t i) {
  const uint4 counter{static_cast<uint32_t>(i), static_cast<uint32_t>(static_cast<uint64_t>(i) >> 32), 0u, 0u};
  const uint2 key{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  return static_cast<float>(curand_Philox4x32_10(counter, key).x >> 8) * (1.0f / 16777216.0f);
}

template <class T>
__global__ void dropout_kernel(float rate, float scale, uint64_t value, const uint64_t* step, const T* in, T* out,
                               int64_t n) {
  const uint64_t seed = step != nullptr ? *step ^ value : value;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    store(out, i, uniform(seed, i) >= rate ? load(in, i) * scale : 0.0f);
}

void launch(float rate, DropoutSeed seed, const void* in, void* out, int64_t n, cudaDataType_t dtype, cudaStream_t stream,
            const char* what) {
  if (!(rate >= 0.0f && rate < 1.0f))
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "dropout: rate must be in [0, 1)");
  if (dtype != CUDA_R_32F && dtype != CUDA_R_16F)
    throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, "dropout: tensors must be float32 or float16");
  if (n <= 0) return;
  const float scale = 1.0f / (1.0f - rate);
  const int64_t wanted = (n + 255) / 256;
  const unsigned blocks = static_cast<unsigned>(wanted > 4096 ? 4096 : wanted);
  if (dtype == CUDA_R_16F)
    dropout_kernel<<<blocks, 256, 0, stream>>>(rate, scale, seed.value, seed.step, static_cast<const __half*>(in),
                                                static_cast<__half*>(out), n);
  else
    dropout_kernel<<<blocks, 256, 0, stream>>>(rate, scale, seed.value, seed.step, static_cast<const float*>(in),
                                                static_cast<float*>(out), n);
  check(cudaGetLastError(), what);
}

}  // namespace

void dropout_forward(float rate, DropoutSeed seed, const void* x, void* y, int64_t n, cudaDataType_t dtype,
                     cudaStream_t stream) {
  launch(rate, seed, x, y, n, dtype, stream, "dropout forward kernel launch");
}

void dropout_backward(float rate, DropoutSeed seed, const void* dy, void* dx, int64_t n, cudaDataType_t dtype,
                      cudaStream_t stream) {
  launch(rate, seed, dy, dx, n, dtype, stream, "dropout backward kernel launch");
}

}  // namespace cuda_plugin
