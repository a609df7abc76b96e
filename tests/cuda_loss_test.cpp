// The cuda plugin's fused softmax cross-entropy against a double-precision reference on a GPU: the mean loss over
// the counted rows (ignored labels are negative), label smoothing, the arg-max hits (the first on ties), the
// gradient scaled by the loss scale over the counted rows; float32 and float16 logits; a label outside the classes
// named by its row.
#include "cuda_check.hpp"
#include "require_gpu.hpp"
#include "softmax_cross_entropy.hpp"

#include <ramjet/sdk/error.hpp>

#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace cuda_plugin;

namespace {

struct LossCase {
  int64_t classes;
  float smoothing;
  cudaDataType_t dtype;
  const char* name;
};

class CudaSoftmaxCrossEntropy : public ::testing::TestWithParam<LossCase> {};

template <class T>
T* device_copy(const std::vector<T>& host) {
  void* p = nullptr;
  check(cudaMalloc(&p, host.size() * sizeof(T)), "cudaMalloc");
  check(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
  return static_cast<T*>(p);
}

TEST_P(CudaSoftmaxCrossEntropy, MatchesTheReference) {
  RAMJET_REQUIRE_GPU();
  const LossCase c = GetParam();
  const int64_t rows = 37, k = c.classes;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> x(rows * k);
  for (auto& v : x) v = normal(rng);
  std::vector<int32_t> labels(rows);
  for (int64_t i = 0; i < rows; ++i) labels[i] = static_cast<int32_t>((i * 7919) % k);
  labels[3] = -1, labels[20] = -1;  // ignored
  // Row 5: two equal maxima; its label is the second, so not a hit.
  x[5 * k + 1] = 50.0f, x[5 * k + 2] = 50.0f, labels[5] = 2;
  // Row 6: the label is the maximum: a hit.
  x[6 * k + 4] = 60.0f, labels[6] = 4;
  const float scale = 1024.0f;
  // The device's copy of the logits, and the values it holds (half-rounded for float16).
  void* logits = nullptr;
  void* gradient = nullptr;
  const size_t element = c.dtype == CUDA_R_16F ? 2 : 4;
  check(cudaMalloc(&logits, x.size() * element), "cudaMalloc");
  check(cudaMalloc(&gradient, x.size() * element), "cudaMalloc");
  if (c.dtype == CUDA_R_16F) {
    std::vector<__half> h(x.size());
    for (size_t i = 0; i < x.size(); ++i) h[i] = __float2half(x[i]), x[i] = __half2float(h[i]);
    check(cudaMemcpy(logits, h.data(), h.size() * 2, cudaMemcpyHostToDevice), "cudaMemcpy");
  } else {
    check(cudaMemcpy(logits, x.data(), x.size() * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  int32_t* device_labels = device_copy(labels);
  void* result_memory = nullptr;
  check(cudaMalloc(&result_memory, sizeof(CrossEntropyResult)), "cudaMalloc");
  auto* result = static_cast<CrossEntropyResult*>(result_memory);
  CrossEntropyResult got{};
  std::vector<float> g(x.size());
  {
    SoftmaxCrossEntropy loss(rows, k, c.smoothing, c.dtype);
    loss.run(logits, device_labels, gradient, scale, result, nullptr);
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    got = SoftmaxCrossEntropy::read(result, "loss");
    if (c.dtype == CUDA_R_16F) {
      std::vector<__half> h(x.size());
      check(cudaMemcpy(h.data(), gradient, h.size() * 2, cudaMemcpyDeviceToHost), "cudaMemcpy");
      for (size_t i = 0; i < h.size(); ++i) g[i] = __half2float(h[i]);
    } else {
      check(cudaMemcpy(g.data(), gradient, g.size() * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
    }
  }
  // The reference, in double.
  double total = 0;
  int counted = 0, hits = 0;
  std::vector<double> want(x.size(), 0.0);
  for (int64_t i = 0; i < rows; ++i) counted += labels[i] >= 0;
  for (int64_t i = 0; i < rows; ++i) {
    if (labels[i] < 0) continue;
    const float* r = &x[i * k];
    int64_t best = 0;
    for (int64_t j = 1; j < k; ++j)
      if (r[j] > r[best]) best = j;
    double sum = 0;
    for (int64_t j = 0; j < k; ++j) sum += std::exp(static_cast<double>(r[j]) - r[best]);
    const double lse = r[best] + std::log(sum);
    for (int64_t j = 0; j < k; ++j) {
      const double t = c.smoothing / k + (j == labels[i] ? 1.0 - c.smoothing : 0.0);
      total += t * (lse - r[j]);
      want[i * k + j] = (std::exp(r[j] - lse) - t) * scale / counted;
    }
    hits += best == labels[i];
  }
  EXPECT_EQ(got.counted, counted);
  EXPECT_EQ(got.correct, hits);
  EXPECT_NEAR(got.loss, total / counted, 2e-5 * std::fabs(total / counted));
  // Gradients: float32 within 1e-5 of the largest (scale / counted), float16 within its rounding.
  const double largest = scale / counted, tolerance = c.dtype == CUDA_R_16F ? 1e-3 : 1e-5;
  size_t bad = 0;
  for (size_t i = 0; i < g.size(); ++i) bad += std::fabs(g[i] - want[i]) > tolerance * largest;
  EXPECT_EQ(bad, 0u);
  cudaFree(result_memory);
  cudaFree(device_labels);
  cudaFree(gradient);
  cudaFree(logits);
}

INSTANTIATE_TEST_SUITE_P(Kinds, CudaSoftmaxCrossEntropy,
                         ::testing::Values(LossCase{114, 0.0f, CUDA_R_32F, "f32_114"},
                                           LossCase{1000, 0.1f, CUDA_R_32F, "f32_1000_smoothed"},
                                           LossCase{114, 0.1f, CUDA_R_16F, "f16_114_smoothed"}),
                         [](const ::testing::TestParamInfo<LossCase>& info) { return std::string(info.param.name); });

TEST(CudaSoftmaxCrossEntropyLabels, AnOutOfRangeLabelIsNamedByItsRow) {
  RAMJET_REQUIRE_GPU();
  const std::vector<float> x(4 * 10, 0.5f);
  const std::vector<int32_t> labels{1, 2, 12, 3};
  float* logits = device_copy(x);
  int32_t* device_labels = device_copy(labels);
  void* result = nullptr;
  check(cudaMalloc(&result, sizeof(CrossEntropyResult)), "cudaMalloc");
  SoftmaxCrossEntropy loss(4, 10, 0.0f, CUDA_R_32F);
  loss.run(logits, device_labels, nullptr, 1.0f, static_cast<CrossEntropyResult*>(result), nullptr);
  try {
    SoftmaxCrossEntropy::read(static_cast<CrossEntropyResult*>(result), "sparse_softmax_cross_entropy");
    ADD_FAILURE() << "no error";
  } catch (const ramjet::Error& e) {
    EXPECT_EQ(e.status(), RAMJET_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(std::string(e.what()),
              "sparse_softmax_cross_entropy: the label of row 2 is 12, outside the logits' classes");
  }
  cudaFree(result);
  cudaFree(device_labels);
  cudaFree(logits);
}

}  // namespace
