#include "point_loss.hpp"

#include "cuda_check.hpp"
#include "float_access.cuh"
#include "grid.cuh"

#include <cub/block/block_reduce.cuh>

namespace cuda_plugin {
namespace {

constexpr int kLossThreads = 256;

template <class T>
__global__ void point_loss_kernel(PointLoss kind, const T* x, const float* y, int64_t n, PointLossResult* result) {
  using SumReduce = cub::BlockReduce<double, kLossThreads>;
  using CountReduce = cub::BlockReduce<long long, kLossThreads>;
  __shared__ typename SumReduce::TempStorage sum_storage;
  __shared__ typename CountReduce::TempStorage count_storage;
  double total = 0.0;
  long long right = 0;
  for (int64_t i = threadIdx.x; i < n; i += kLossThreads) {
    const double z = load(x, i), t = y[i];
    if (kind == PointLoss::binary_cross_entropy) {
      // max(z, 0) − z t + log(1 + e^−|z|): the stable form, as TensorFlow's sigmoid_cross_entropy_with_logits.
      total += fmax(z, 0.0) - z * t + log1p(exp(-fabs(z)));
      right += (z > 0.0) == (t > 0.5);
    } else {
      const double d = z - t;
      total += kind == PointLoss::mse ? d * d : fabs(d);
    }
  }
  total = SumReduce(sum_storage).Sum(total);
  right = CountReduce(count_storage).Sum(right);
  if (threadIdx.x == 0) {
    result->loss = static_cast<float>(total / static_cast<double>(n));
    result->correct = static_cast<int32_t>(right);
  }
}

template <class T>
__global__ void point_gradient_kernel(PointLoss kind, const T* x, const float* y, T* dx, int64_t n, float s) {
  RAMJET_GRID_STRIDE(i, n) {
    const float z = load(x, i), diff = z - y[i];
    const float g = kind == PointLoss::binary_cross_entropy ? (1.0f / (1.0f + expf(-z)) - y[i]) * s
                    : kind == PointLoss::mse                ? 2.0f * s * diff
                                                            : (diff > 0.0f ? s : diff < 0.0f ? -s : 0.0f);
    store(dx, i, g);
  }
}

}  // namespace

void point_loss_forward(PointLoss kind, const void* x, const float* targets, int64_t n, cudaDataType_t dtype,
                        PointLossResult* result, cudaStream_t stream) {
  if (dtype == CUDA_R_16F)
    point_loss_kernel<<<1, kLossThreads, 0, stream>>>(kind, static_cast<const __half*>(x), targets, n, result);
  else
    point_loss_kernel<<<1, kLossThreads, 0, stream>>>(kind, static_cast<const float*>(x), targets, n, result);
  check(cudaGetLastError(), "loss kernel launch");
}

void point_loss_backward(PointLoss kind, const void* x, const float* targets, void* dx, int64_t n, float scale,
                         cudaDataType_t dtype, cudaStream_t stream) {
  const float s = scale / static_cast<float>(n);
  if (dtype == CUDA_R_16F)
    point_gradient_kernel<<<grid_blocks(n), kGridThreads, 0, stream>>>(kind, static_cast<const __half*>(x), targets,
                                                                       static_cast<__half*>(dx), n, s);
  else
    point_gradient_kernel<<<grid_blocks(n), kGridThreads, 0, stream>>>(kind, static_cast<const float*>(x), targets,
                                                                       static_cast<float*>(dx), n, s);
  check(cudaGetLastError(), "loss gradient kernel launch");
}

}  // namespace cuda_plugin
