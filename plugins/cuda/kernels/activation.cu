#include "activation.hpp"
#include "cuda_check.hpp"
#include "float_access.cuh"

#include <ramjet/sdk/error.hpp>

#include <cuda_fp16.h>

#include <array>
#include <utility>

namespace cuda_plugin {
namespace {

constexpr std::array<std::pair<const char*, Activation>, 10> kNames{{{"linear", Activation::linear},
                                                                     {"relu", Activation::relu},
                                                                     {"relu6", Activation::relu6},
                                                                     {"sigmoid", Activation::sigmoid},
                                                                     {"tanh", Activation::tanh},
                                                                     {"gelu", Activation::gelu},
                                                                     {"swish", Activation::swish},
                                                                     {"elu", Activation::elu},
                                                                     {"softplus", Activation::softplus},
                                                                     {"leaky_relu", Activation::leaky_relu}}};

__device__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

__device__ float forward_of(Activation f, float alpha, float x) {
  switch (f) {
    case Activation::linear: return x;
    case Activation::relu: return fmaxf(x, 0.0f);
    case Activation::relu6: return fminf(fmaxf(x, 0.0f), 6.0f);
    case Activation::sigmoid: return sigmoid(x);
    case Activation::tanh: return tanhf(x);
    // Φ(x) as erfc(−x/√2)/2: for x well below 0, 1 + erf cancels to nothing in float32 where erfc does not.
    case Activation::gelu: return 0.5f * x * erfcf(-x * 0.70710678118654752f);
    case Activation::swish: return x * sigmoid(x);
    case Activation::elu: return x > 0.0f ? x : alpha * expm1f(x);
    case Activation::softplus: return fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x)));  // no overflow for large x
    case Activation::leaky_relu: return x > 0.0f ? x : alpha * x;
  }
  return x;
}

__device__ float derivative_of(Activation f, float alpha, float x) {
  switch (f) {
    case Activation::linear: return 1.0f;
    case Activation::relu: return x > 0.0f ? 1.0f : 0.0f;
    case Activation::relu6: return x > 0.0f && x < 6.0f ? 1.0f : 0.0f;
    case Activation::sigmoid: {
      const float s = sigmoid(x);
      return s * (1.0f - s);
    }
    case Activation::tanh: {
      const float t = tanhf(x);
      return 1.0f - t * t;
    }
    case Activation::gelu:  // Φ(x) + x·φ(x)
      return 0.5f * erfcf(-x * 0.70710678118654752f) + x * 0.39894228040143268f * expf(-0.5f * x * x);
    case Activation::swish: {
      const float s = sigmoid(x);
      return s + x * s * (1.0f - s);
    }
    case Activation::elu: return x > 0.0f ? 1.0f : alpha * expf(x);
    case Activation::softplus: return sigmoid(x);
    case Activation::leaky_relu: return x > 0.0f ? 1.0f : alpha;
  }
  return 1.0f;
}

template <class T>
__global__ void forward_kernel(Activation f, float alpha, const T* x, T* y, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    store(y, i, forward_of(f, alpha, load(x, i)));
}

template <class T>
__global__ void backward_kernel(Activation f, float alpha, const T* x, const T* dy, T* dx, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    store(dx, i, load(dy, i) * derivative_of(f, alpha, load(x, i)));
}

// A grid-stride loop over at most 4096 blocks of 256: enough to fill any current GPU.
unsigned blocks_for(int64_t n) {
  const int64_t blocks = (n + 255) / 256;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 4096 ? 4096 : blocks));
}

void require_dtype(cudaDataType_t dtype) {
  if (dtype != CUDA_R_32F && dtype != CUDA_R_16F)
    throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, "activation: tensors must be float32 or float16");
}

}  // namespace

Activation activation_named(const std::string& name) {
  std::string known;
  for (const auto& [n, f] : kNames) {
    if (name == n) return f;
    known += known.empty() ? n : std::string(", ") + n;
  }
  throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, "activation '" + name + "' is not one the cuda kernels have (" + known + ")");
}

void activation_forward(Activation f, float alpha, const void* x, void* y, int64_t n, cudaDataType_t dtype,
                        cudaStream_t stream) {
  require_dtype(dtype);
  if (n <= 0) return;
  if (dtype == CUDA_R_16F)
    forward_kernel<<<blocks_for(n), 256, 0, stream>>>(f, alpha, static_cast<const __half*>(x), static_cast<__half*>(y), n);
  else
    forward_kernel<<<blocks_for(n), 256, 0, stream>>>(f, alpha, static_cast<const float*>(x), static_cast<float*>(y), n);
  check(cudaGetLastError(), "activation forward kernel launch");
}

void activation_backward(Activation f, float alpha, const void* x, const void* dy, void* dx, int64_t n,
                         cudaDataType_t dtype, cudaStream_t stream) {
  require_dtype(dtype);
  if (n <= 0) return;
  if (dtype == CUDA_R_16F)
    backward_kernel<<<blocks_for(n), 256, 0, stream>>>(f, alpha, static_cast<const __half*>(x),
                                                        static_cast<const __half*>(dy), static_cast<__half*>(dx), n);
  else
    backward_kernel<<<blocks_for(n), 256, 0, stream>>>(f, alpha, static_cast<const float*>(x),
                                                        static_cast<const float*>(dy), static_cast<float*>(dx), n);
  check(cudaGetLastError(), "activation backward kernel launch");
}

}  // namespace cuda_plugin
