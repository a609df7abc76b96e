#include "cuda_check.hpp"
#include "float_access.cuh"
#include "softmax_cross_entropy.hpp"

#include <ramjet/sdk/error.hpp>

#include <cub/block/block_reduce.cuh>
#include <cuda_fp16.h>

#include <cfloat>

namespace cuda_plugin {
namespace {

constexpr int kThreads = 256;

// How many labels are counted, and the first out of range: one block, a fixed order.
__global__ void count_kernel(const int32_t* labels, int64_t rows, int64_t classes, CrossEntropyResult* result) {
  using Reduce = cub::BlockReduce<int, kThreads>;
  __shared__ typename Reduce::TempStorage counted_storage, bad_storage;
  int counted = 0, bad = INT_MAX;
  for (int64_t i = threadIdx.x; i < rows; i += kThreads) {
    counted += labels[i] >= 0;
    if (labels[i] >= classes && i < bad) bad = static_cast<int>(i);
  }
  counted = Reduce(counted_storage).Sum(counted);
  bad = Reduce(bad_storage).Reduce(bad, [](int a, int b) { return a < b ? a : b; });
  if (threadIdx.x == 0) {
    result->counted = counted;
    result->bad_row = bad == INT_MAX ? -1 : bad;
    result->bad_label = bad == INT_MAX ? 0 : labels[bad];
  }
}

// One block a row: the maximum (and its first index), the sum of exponentials, the loss, then the gradient.
template <class T>
__global__ void row_kernel(const T* logits, const int32_t* labels, T* gradient, int64_t classes, float smoothing,
                           float scale, const CrossEntropyResult* counts, float* row_loss, int32_t* row_hit) {
  const int64_t row = blockIdx.x;
  const T* x = logits + row * classes;
  const int32_t label = labels[row];
  using Reduce = cub::BlockReduce<float, kThreads>;
  using ArgReduce = cub::BlockReduce<cub::KeyValuePair<int, float>, kThreads>;
  __shared__ typename Reduce::TempStorage storage;
  __shared__ typename ArgReduce::TempStorage arg_storage;
  __shared__ float shared_top, shared_lse, shared_sum;
  __shared__ int shared_best;

  cub::KeyValuePair<int, float> best{INT_MAX, -FLT_MAX};
  float sum_x = 0.0f;
  for (int64_t j = threadIdx.x; j < classes; j += kThreads) {
    const float v = load(x, j);
    if (v > best.value) best = {static_cast<int>(j), v};  // j rises, so ties keep the first
    sum_x += v;
  }
  const auto top = ArgReduce(arg_storage).Reduce(best, [](const auto& a, const auto& b) {
    return (b.value > a.value || (b.value == a.value && b.key < a.key)) ? b : a;
  });
  const float total_x = Reduce(storage).Sum(sum_x);
  if (threadIdx.x == 0) shared_top = top.value, shared_best = top.key, shared_sum = total_x;
  __syncthreads();
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < classes; j += kThreads) sum += expf(load(x, j) - shared_top);
  const float total = Reduce(storage).Sum(sum);
  if (threadIdx.x == 0) shared_lse = shared_top + logf(total);
  __syncthreads();
  const float lse = shared_lse;
  const bool counted = label >= 0 && label < classes;
  if (threadIdx.x == 0) {
    float loss = 0.0f;
    if (counted) {
      // Σ_j t_j (lse − x_j) with t = (1 − ε)·one-hot + ε / classes.
      loss = (1.0f - smoothing) * (lse - load(x, label)) +
             smoothing * (lse - shared_sum / static_cast<float>(classes));
    }
    row_loss[row] = loss;
    row_hit[row] = counted && shared_best == label;
  }
  if (gradient == nullptr) return;
  const int n = counts->counted;
  const float factor = counted && n > 0 ? scale / static_cast<float>(n) : 0.0f;
  const float floor_target = smoothing / static_cast<float>(classes);
  T* g = gradient + row * classes;
  for (int64_t j = threadIdx.x; j < classes; j += kThreads) {
    const float p = expf(load(x, j) - lse);  // not __expf: its error shows in finite differences
    const float target = floor_target + (j == label ? 1.0f - smoothing : 0.0f);
    store(g, j, (p - target) * factor);
  }
}

// The mean loss and the hits, summed in one block in a fixed order.
__global__ void total_kernel(const float* row_loss, const int32_t* row_hit, int64_t rows, CrossEntropyResult* result) {
  using Reduce = cub::BlockReduce<double, kThreads>;
  using IntReduce = cub::BlockReduce<int, kThreads>;
  __shared__ typename Reduce::TempStorage storage;
  __shared__ typename IntReduce::TempStorage int_storage;
  double loss = 0.0;
  int hits = 0;
  for (int64_t i = threadIdx.x; i < rows; i += kThreads) loss += row_loss[i], hits += row_hit[i];
  loss = Reduce(storage).Sum(loss);
  hits = IntReduce(int_storage).Sum(hits);
  if (threadIdx.x == 0) {
    result->loss = result->counted > 0 ? static_cast<float>(loss / result->counted) : 0.0f;
    result->correct = hits;
  }
}

}  // namespace

SoftmaxCrossEntropy::SoftmaxCrossEntropy(int64_t rows, int64_t classes, float label_smoothing,
                                         cudaDataType_t logits_dtype)
    : rows_(rows), classes_(classes), smoothing_(label_smoothing), dtype_(logits_dtype) {
  if (logits_dtype != CUDA_R_32F && logits_dtype != CUDA_R_16F)
    throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, "softmax cross-entropy: logits must be float32 or float16");
  if (rows < 1 || classes < 1 || rows > INT32_MAX || classes > INT32_MAX)
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "softmax cross-entropy: rows and classes must be in [1, 2^31)");
  void* loss = nullptr;
  void* hit = nullptr;
  check(cudaMalloc(&loss, static_cast<size_t>(rows) * sizeof(float)), "cudaMalloc", "the loss's per-row scratch");
  if (cudaError_t status = cudaMalloc(&hit, static_cast<size_t>(rows) * sizeof(int32_t)); status != cudaSuccess) {
    cudaFree(loss);
    check(status, "cudaMalloc", "the loss's per-row scratch");
  }
  row_loss_ = static_cast<float*>(loss);
  row_hit_ = static_cast<int32_t*>(hit);
}

SoftmaxCrossEntropy::~SoftmaxCrossEntropy() {
  cudaFree(row_hit_);
  cudaFree(row_loss_);
}

void SoftmaxCrossEntropy::run(const void* logits, const int32_t* labels, void* gradient, float scale,
                              CrossEntropyResult* result, cudaStream_t stream) const {
  count_kernel<<<1, kThreads, 0, stream>>>(labels, rows_, classes_, result);
  const unsigned blocks = static_cast<unsigned>(rows_);
  if (dtype_ == CUDA_R_16F)
    row_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const __half*>(logits), labels,
                                                 static_cast<__half*>(gradient), classes_, smoothing_, scale, result,
                                                 row_loss_, row_hit_);
  else
    row_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const float*>(logits), labels,
                                                 static_cast<float*>(gradient), classes_, smoothing_, scale, result,
                                                 row_loss_, row_hit_);
  total_kernel<<<1, kThreads, 0, stream>>>(row_loss_, row_hit_, rows_, result);
  check(cudaGetLastError(), "softmax cross-entropy kernel launch");
}

CrossEntropyResult SoftmaxCrossEntropy::read(const CrossEntropyResult* result, const std::string& loss_name) {
  CrossEntropyResult r{};
  check(cudaMemcpy(&r, result, sizeof r, cudaMemcpyDeviceToHost), "cudaMemcpy", loss_name + "'s result");
  if (r.bad_row >= 0)
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, loss_name + ": the label of row " + std::to_string(r.bad_row) +
                                                         " is " + std::to_string(r.bad_label) +
                                                         ", outside the logits' classes");
  return r;
}

}  // namespace cuda_plugin
