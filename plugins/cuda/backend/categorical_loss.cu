#include "categorical_loss.hpp"

#include "cuda_check.hpp"
#include "float_access.cuh"
#include "grid.cuh"

#include <cub/block/block_reduce.cuh>

namespace cuda_plugin {
namespace {

constexpr int kReduceThreads = 256;

// A row's arg-max (the first), its maximum and Σ exp(x − max).
struct RowTerms {
  int64_t best;
  float top, sum;
};

template <class T>
__device__ RowTerms row_softmax_terms(const T* x, int64_t classes) {
  RowTerms t{0, 0.0f, 0.0f};
  for (int64_t j = 1; j < classes; ++j)
    if (load(x, j) > load(x, t.best)) t.best = j;
  t.top = load(x, t.best);
  for (int64_t j = 0; j < classes; ++j) t.sum += expf(load(x, j) - t.top);
  return t;
}

template <class T>
__global__ void categorical_rows_kernel(const T* logits, const float* targets, int64_t rows, int64_t classes,
                                        float smoothing, float* row_loss, int32_t* row_hit) {
  RAMJET_GRID_STRIDE(r, rows) {
    const T* x = logits + r * classes;
    const float* y = targets + r * classes;
    const RowTerms t = row_softmax_terms(x, classes);
    const double lse = static_cast<double>(t.top) + log(static_cast<double>(t.sum));
    double total = 0.0;
    int64_t wanted = 0;
    for (int64_t j = 0; j < classes; ++j) {
      const double target = (1.0 - smoothing) * y[j] + smoothing / static_cast<double>(classes);
      total += target * (lse - static_cast<double>(load(x, j)));
      if (y[j] > y[wanted]) wanted = j;
    }
    row_loss[r] = static_cast<float>(total);
    row_hit[r] = t.best == wanted;
  }
}

__global__ void mean_rows_kernel(const float* row_loss, const int32_t* row_hit, int64_t rows, RowLossResult* result) {
  using SumReduce = cub::BlockReduce<double, kReduceThreads>;
  using CountReduce = cub::BlockReduce<int, kReduceThreads>;
  __shared__ typename SumReduce::TempStorage sum_storage;
  __shared__ typename CountReduce::TempStorage count_storage;
  double total = 0.0;
  int right = 0;
  for (int64_t r = threadIdx.x; r < rows; r += kReduceThreads) {
    total += row_loss[r];
    right += row_hit[r];
  }
  total = SumReduce(sum_storage).Sum(total);
  right = CountReduce(count_storage).Sum(right);
  if (threadIdx.x == 0) {
    result->loss = rows > 0 ? static_cast<float>(total / static_cast<double>(rows)) : 0.0f;
    result->correct = right;
  }
}

template <class T>
__global__ void categorical_gradient_kernel(const T* logits, const float* targets, T* dlogits, int64_t rows,
                                            int64_t classes, float smoothing, float s) {
  RAMJET_GRID_STRIDE(r, rows) {
    const T* x = logits + r * classes;
    const float* y = targets + r * classes;
    const RowTerms t = row_softmax_terms(x, classes);
    const float uniform = smoothing / static_cast<float>(classes);
    float total = 0.0f;
    for (int64_t j = 0; j < classes; ++j) total += (1.0f - smoothing) * y[j] + uniform;
    for (int64_t j = 0; j < classes; ++j) {
      const float p = expf(load(x, j) - t.top) / t.sum;
      store(dlogits, r * classes + j, (p * total - ((1.0f - smoothing) * y[j] + uniform)) * s);
    }
  }
}

}  // namespace

void categorical_forward(const void* logits, const float* targets, int64_t rows, int64_t classes, float smoothing,
                         cudaDataType_t dtype, float* row_loss, int32_t* row_hit, RowLossResult* result,
                         cudaStream_t stream) {
  const unsigned blocks = grid_blocks(rows);
  if (dtype == CUDA_R_16F)
    categorical_rows_kernel<<<blocks, kGridThreads, 0, stream>>>(static_cast<const __half*>(logits), targets, rows,
                                                                 classes, smoothing, row_loss, row_hit);
  else
    categorical_rows_kernel<<<blocks, kGridThreads, 0, stream>>>(static_cast<const float*>(logits), targets, rows,
                                                                 classes, smoothing, row_loss, row_hit);
  mean_rows_kernel<<<1, kReduceThreads, 0, stream>>>(row_loss, row_hit, rows, result);
  check(cudaGetLastError(), "categorical cross-entropy kernel launch");
}

void categorical_backward(const void* logits, const float* targets, void* dlogits, int64_t rows, int64_t classes,
                          float smoothing, float scale, cudaDataType_t dtype, cudaStream_t stream) {
  const float s = rows > 0 ? scale / static_cast<float>(rows) : 0.0f;
  const unsigned blocks = grid_blocks(rows);
  if (dtype == CUDA_R_16F)
    categorical_gradient_kernel<<<blocks, kGridThreads, 0, stream>>>(static_cast<const __half*>(logits), targets,
                                                                     static_cast<__half*>(dlogits), rows, classes,
                                                                     smoothing, s);
  else
    categorical_gradient_kernel<<<blocks, kGridThreads, 0, stream>>>(static_cast<const float*>(logits), targets,
                                                                     static_cast<float*>(dlogits), rows, classes,
                                                                     smoothing, s);
  check(cudaGetLastError(), "categorical cross-entropy gradient kernel launch");
}

}  // namespace cuda_plugin
