#include "batch_norm.hpp"

#include "cuda_check.hpp"
#include "float_access.cuh"

#include <cub/block/block_reduce.cuh>
#include <cuda_fp16.h>

namespace cuda_plugin {
namespace {

constexpr int kThreads = 256;
using Reduce = cub::BlockReduce<float, kThreads>;

// One block per channel: the batch's mean, then its biased variance (two passes: no cancellation), the channel's
// rstd, and the moving statistics.
template <class T>
__global__ void statistics_kernel(const T* x, float* mean, float* rstd, float* moving_mean, float* moving_variance,
                                  float momentum, BatchNormShape s) {
  __shared__ typename Reduce::TempStorage storage;
  __shared__ float shared_mean;
  const int64_t c = blockIdx.x;
  float sum = 0.0f;
  for (int64_t r = threadIdx.x; r < s.rows; r += kThreads) sum += load(x, r * s.channels + c);
  const float total = Reduce(storage).Sum(sum);
  if (threadIdx.x == 0) shared_mean = total / static_cast<float>(s.rows);
  __syncthreads();
  const float m = shared_mean;
  float squares = 0.0f;
  for (int64_t r = threadIdx.x; r < s.rows; r += kThreads) {
    const float d = load(x, r * s.channels + c) - m;
    squares += d * d;
  }
  const float total_squares = Reduce(storage).Sum(squares);
  if (threadIdx.x == 0) {
    const float var = total_squares / static_cast<float>(s.rows);
    mean[c] = m;
    rstd[c] = 1.0f / sqrtf(var + s.epsilon);  // rounded correctly, unlike rsqrtf: the cpu backend's figure
    moving_mean[c] = momentum * moving_mean[c] + (1.0f - momentum) * m;
    moving_variance[c] = momentum * moving_variance[c] + (1.0f - momentum) * var;
  }
}

// y = (x − mean) · rstd · gamma + beta, one thread per element.
template <class T>
__global__ void normalize_kernel(const T* x, const float* gamma, const float* beta, const float* mean,
                                 const float* rstd, const float* variance, T* y, BatchNormShape s) {
  const int64_t n = s.rows * s.channels;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = i % s.channels;
    const float r = variance != nullptr ? 1.0f / sqrtf(variance[c] + s.epsilon) : rstd[c];
    store(y, i, (load(x, i) - mean[c]) * r * gamma[c] + beta[c]);
  }
}

// One block per channel: dbeta = Σ dy, dgamma = Σ dy · x̂.
template <class T>
__global__ void parameter_gradient_kernel(const T* x, const T* dy, const float* mean, const float* rstd, float* dgamma,
                                          float* dbeta, BatchNormShape s) {
  __shared__ typename Reduce::TempStorage storage;
  const int64_t c = blockIdx.x;
  float sum_dy = 0.0f, sum_dy_xhat = 0.0f;
  for (int64_t r = threadIdx.x; r < s.rows; r += kThreads) {
    const int64_t i = r * s.channels + c;
    const float g = load(dy, i);
    sum_dy += g;
    sum_dy_xhat += g * (load(x, i) - mean[c]) * rstd[c];
  }
  const float total_dy = Reduce(storage).Sum(sum_dy);
  __syncthreads();
  const float total_dy_xhat = Reduce(storage).Sum(sum_dy_xhat);
  if (threadIdx.x == 0) dbeta[c] = total_dy, dgamma[c] = total_dy_xhat;
}

// dx = gamma · rstd / M · (M · dy − dbeta − x̂ · dgamma), one thread per element.
template <class T>
__global__ void input_gradient_kernel(const T* x, const T* dy, const float* gamma, const float* mean, const float* rstd,
                                      const float* dgamma, const float* dbeta, T* dx, BatchNormShape s) {
  const int64_t n = s.rows * s.channels;
  const float m = static_cast<float>(s.rows);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = i % s.channels;
    const float xhat = (load(x, i) - mean[c]) * rstd[c];
    store(dx, i, gamma[c] * rstd[c] / m * (m * load(dy, i) - dbeta[c] - xhat * dgamma[c]));
  }
}

unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 65535 * 8 ? b : 65535 * 8);
}

template <class T>
const T* as(const void* p) { return static_cast<const T*>(p); }
template <class T>
T* as(void* p) { return static_cast<T*>(p); }

}  // namespace

void batch_norm_train(const void* x, const float* gamma, const float* beta, void* y, float* mean, float* rstd,
                      float* moving_mean, float* moving_variance, float momentum, const BatchNormShape& s,
                      cudaDataType_t dtype, cudaStream_t stream) {
  const auto channels = static_cast<unsigned>(s.channels);
  const unsigned blocks = blocks_for(s.rows * s.channels);
  if (dtype == CUDA_R_16F) {
    statistics_kernel<<<channels, kThreads, 0, stream>>>(as<__half>(x), mean, rstd, moving_mean, moving_variance,
                                                          momentum, s);
    normalize_kernel<<<blocks, kThreads, 0, stream>>>(as<__half>(x), gamma, beta, mean, rstd, nullptr, as<__half>(y), s);
  } else {
    statistics_kernel<<<channels, kThreads, 0, stream>>>(as<float>(x), mean, rstd, moving_mean, moving_variance,
                                                          momentum, s);
    normalize_kernel<<<blocks, kThreads, 0, stream>>>(as<float>(x), gamma, beta, mean, rstd, nullptr, as<float>(y), s);
  }
  check(cudaGetLastError(), "batch norm kernel launch");
}

void batch_norm_infer(const void* x, const float* gamma, const float* beta, const float* moving_mean,
                      const float* moving_variance, void* y, const BatchNormShape& s, cudaDataType_t dtype,
                      cudaStream_t stream) {
  const unsigned blocks = blocks_for(s.rows * s.channels);
  if (dtype == CUDA_R_16F)
    normalize_kernel<<<blocks, kThreads, 0, stream>>>(as<__half>(x), gamma, beta, moving_mean, nullptr,
                                                      moving_variance, as<__half>(y), s);
  else
    normalize_kernel<<<blocks, kThreads, 0, stream>>>(as<float>(x), gamma, beta, moving_mean, nullptr,
                                                      moving_variance, as<float>(y), s);
  check(cudaGetLastError(), "batch norm kernel launch");
}

void batch_norm_backward(const void* x, const void* dy, const float* gamma, const float* mean, const float* rstd,
                         void* dx, float* dgamma, float* dbeta, const BatchNormShape& s, cudaDataType_t dtype,
                         cudaStream_t stream) {
  const auto channels = static_cast<unsigned>(s.channels);
  const unsigned blocks = blocks_for(s.rows * s.channels);
  if (dtype == CUDA_R_16F) {
    parameter_gradient_kernel<<<channels, kThreads, 0, stream>>>(as<__half>(x), as<__half>(dy), mean, rstd, dgamma,
                                                                  dbeta, s);
    if (dx != nullptr)
      input_gradient_kernel<<<blocks, kThreads, 0, stream>>>(as<__half>(x), as<__half>(dy), gamma, mean, rstd, dgamma,
                                                             dbeta, as<__half>(dx), s);
  } else {
    parameter_gradient_kernel<<<channels, kThreads, 0, stream>>>(as<float>(x), as<float>(dy), mean, rstd, dgamma,
                                                                  dbeta, s);
    if (dx != nullptr)
      input_gradient_kernel<<<blocks, kThreads, 0, stream>>>(as<float>(x), as<float>(dy), gamma, mean, rstd, dgamma,
                                                             dbeta, as<float>(dx), s);
  }
  check(cudaGetLastError(), "batch norm backward kernel launch");
}

}  // namespace cuda_plugin
