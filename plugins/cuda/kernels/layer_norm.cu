#include "cuda_check.hpp"
#include "float_access.cuh"
#include "layer_norm.hpp"

#include <ramjet/sdk/error.hpp>

#include <cub/block/block_reduce.cuh>

namespace cuda_plugin {
namespace {

constexpr int kThreads = 256;

// One block a row: the mean, then the variance around it (two passes: no cancellation), then y.
template <class T>
__global__ void forward_kernel(const T* x, const float* gamma, const float* beta, T* y, float* mean_out,
                               float* rstd_out, int64_t features, float epsilon) {
  using Reduce = cub::BlockReduce<float, kThreads>;
  __shared__ typename Reduce::TempStorage storage;
  __shared__ float shared_mean, shared_rstd;
  const int64_t row = blockIdx.x;
  const T* xr = x + row * features;
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < features; j += kThreads) sum += load(xr, j);
  sum = Reduce(storage).Sum(sum);
  if (threadIdx.x == 0) shared_mean = sum / static_cast<float>(features);
  __syncthreads();
  const float mean = shared_mean;
  float squares = 0.0f;
  for (int64_t j = threadIdx.x; j < features; j += kThreads) {
    const float d = load(xr, j) - mean;
    squares += d * d;
  }
  squares = Reduce(storage).Sum(squares);
  if (threadIdx.x == 0) {
    shared_rstd = rsqrtf(squares / static_cast<float>(features) + epsilon);
    mean_out[row] = mean;
    rstd_out[row] = shared_rstd;
  }
  __syncthreads();
  const float rstd = shared_rstd;
  T* yr = y + row * features;
  for (int64_t j = threadIdx.x; j < features; j += kThreads)
    store(yr, j, (load(xr, j) - mean) * rstd * gamma[j] + beta[j]);
}

// One block a row: dx = rstd · (g − mean(g) − x̂ · mean(g · x̂)), g = dy · gamma.
template <class T>
__global__ void backward_data_kernel(const T* x, const T* dy, const float* gamma, const float* mean,
                                     const float* rstd, T* dx, int64_t features) {
  using Reduce = cub::BlockReduce<float, kThreads>;
  __shared__ typename Reduce::TempStorage storage;
  __shared__ float shared_g, shared_gx;
  const int64_t row = blockIdx.x;
  const T* xr = x + row * features;
  const T* dyr = dy + row * features;
  const float m = mean[row], r = rstd[row];
  float sum_g = 0.0f, sum_gx = 0.0f;
  for (int64_t j = threadIdx.x; j < features; j += kThreads) {
    const float g = load(dyr, j) * gamma[j];
    sum_g += g;
    sum_gx += g * (load(xr, j) - m) * r;
  }
  sum_g = Reduce(storage).Sum(sum_g);
  __syncthreads();
  sum_gx = Reduce(storage).Sum(sum_gx);
  if (threadIdx.x == 0) {
    shared_g = sum_g / static_cast<float>(features);
    shared_gx = sum_gx / static_cast<float>(features);
  }
  __syncthreads();
  T* dxr = dx + row * features;
  for (int64_t j = threadIdx.x; j < features; j += kThreads) {
    const float xhat = (load(xr, j) - m) * r;
    store(dxr, j, r * (load(dyr, j) * gamma[j] - shared_g - xhat * shared_gx));
  }
}

// One thread a feature, down the rows in order.
template <class T>
__global__ void backward_parameters_kernel(const T* x, const T* dy, const float* mean, const float* rstd,
                                           float* dgamma, float* dbeta, int64_t rows, int64_t features) {
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= features) return;
  float dg = 0.0f, db = 0.0f;
  for (int64_t i = 0; i < rows; ++i) {
    const float d = load(dy, i * features + j);
    dg += d * (load(x, i * features + j) - mean[i]) * rstd[i];
    db += d;
  }
  dgamma[j] = dg;
  dbeta[j] = db;
}

void require(cudaDataType_t dtype, int64_t rows, int64_t features) {
  if (dtype != CUDA_R_32F && dtype != CUDA_R_16F)
    throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, "layer_norm: activations must be float32 or float16");
  if (rows < 1 || features < 1 || rows > INT32_MAX)
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "layer_norm: rows must be in [1, 2^31) and features >= 1");
}

}  // namespace

void layer_norm_forward(const void* x, const float* gamma, const float* beta, void* y, float* mean, float* rstd,
                        int64_t rows, int64_t features, float epsilon, cudaDataType_t dtype, cudaStream_t stream) {
  require(dtype, rows, features);
  const unsigned blocks = static_cast<unsigned>(rows);
  if (dtype == CUDA_R_16F)
    forward_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const __half*>(x), gamma, beta,
                                                     static_cast<__half*>(y), mean, rstd, features, epsilon);
  else
    forward_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const float*>(x), gamma, beta, static_cast<float*>(y),
                                                     mean, rstd, features, epsilon);
  check(cudaGetLastError(), "layer_norm forward kernel launch");
}

void layer_norm_backward(const void* x, const void* dy, const float* gamma, const float* mean, const float* rstd,
                         void* dx, float* dgamma, float* dbeta, int64_t rows, int64_t features, cudaDataType_t dtype,
                         cudaStream_t stream) {
  require(dtype, rows, features);
  const unsigned blocks = static_cast<unsigned>(rows);
  const unsigned columns = static_cast<unsigned>((features + kThreads - 1) / kThreads);
  if (dtype == CUDA_R_16F) {
    backward_data_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const __half*>(x),
                                                           static_cast<const __half*>(dy), gamma, mean, rstd,
                                                           static_cast<__half*>(dx), features);
    backward_parameters_kernel<<<columns, kThreads, 0, stream>>>(static_cast<const __half*>(x),
                                                                  static_cast<const __half*>(dy), mean, rstd, dgamma,
                                                                  dbeta, rows, features);
  } else {
    backward_data_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const float*>(x), static_cast<const float*>(dy),
                                                           gamma, mean, rstd, static_cast<float*>(dx), features);
    backward_parameters_kernel<<<columns, kThreads, 0, stream>>>(static_cast<const float*>(x),
                                                                  static_cast<const float*>(dy), mean, rstd, dgamma,
                                                                  dbeta, rows, features);
  }
  check(cudaGetLastError(), "layer_norm backward kernel launch");
}

}  // namespace cuda_plugin
