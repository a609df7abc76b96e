// The cuda plugin's dropout on a GPU: the kept share near 1 − rate, kept values scaled exactly by 1 / (1 − rate),
// the backward's mask the forward's, the same seed the same mask, another seed another, a seed in device memory the
// same as by value; a bad rate refused everywhere.
#include "cuda_check.hpp"
#include "dropout.hpp"
#include "require_gpu.hpp"

#include <ramjet/sdk/error.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace cuda_plugin;

namespace {

TEST(CudaDropout, ARateOutsideZeroToOneIsRefused) {
  EXPECT_THROW(dropout_forward(1.0f, 1, nullptr, nullptr, 10, CUDA_R_32F, nullptr), ramjet::Error);
  EXPECT_THROW(dropout_forward(-0.1f, 1, nullptr, nullptr, 10, CUDA_R_32F, nullptr), ramjet::Error);
}

TEST(CudaDropout, KeepsOneMinusRateScaledAndTheBackwardMasksAlike) {
  RAMJET_REQUIRE_GPU();
  const int64_t n = 1 << 20;
  const float rate = 0.3f, scale = 1.0f / (1.0f - rate);
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = 1.0f + static_cast<float>(i % 97) / 97.0f;  // never 0
  void *dx_in = nullptr, *y = nullptr, *dx = nullptr, *y2 = nullptr, *y3 = nullptr;
  for (void** p : {&dx_in, &y, &dx, &y2, &y3}) check(cudaMalloc(p, n * 4), "cudaMalloc");
  check(cudaMemcpy(dx_in, x.data(), n * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
  dropout_forward(rate, 42, dx_in, y, n, CUDA_R_32F, nullptr);
  dropout_backward(rate, 42, dx_in, dx, n, CUDA_R_32F, nullptr);  // dy = x
  dropout_forward(rate, 42, dx_in, y2, n, CUDA_R_32F, nullptr);
  dropout_forward(rate, 43, dx_in, y3, n, CUDA_R_32F, nullptr);
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  auto get = [&](void* p) {
    std::vector<float> v(n);
    check(cudaMemcpy(v.data(), p, n * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
    return v;
  };
  const auto fy = get(y), fdx = get(dx), fy2 = get(y2), fy3 = get(y3);
  int64_t kept = 0, wrong = 0, differ = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (fy[i] != 0.0f) {
      ++kept;
      wrong += fy[i] != x[i] * scale;
    }
    wrong += fdx[i] != fy[i];  // the backward of dy = x is the forward of x
    differ += (fy3[i] != 0.0f) != (fy[i] != 0.0f);
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_NEAR(static_cast<double>(kept) / n, 1.0 - rate, 0.003);  // 6 standard deviations
  EXPECT_EQ(fy2, fy) << "the same seed, the same mask";
  EXPECT_GT(differ, n / 4) << "another seed, another mask";
  for (void* p : {dx_in, y, dx, y2, y3}) cudaFree(p);
}

// A seed read from device memory as the kernel runs (what a CUDA graph's replayed launch uses): XOR the layer's
// salt, it draws the mask of the seed given by value; changing the device's copy after the launch was recorded
// changes the mask of the next run of the same launch.
TEST(CudaDropout, ASeedInDeviceMemoryIsTheSeedGivenByValue) {
  RAMJET_REQUIRE_GPU();
  const int64_t n = 1 << 16;
  const float rate = 0.4f;
  const uint64_t salt = 0x9E3779B97F4A7C15ull, step = 1234567;
  std::vector<float> x(n, 1.0f);
  void *in = nullptr, *by_value = nullptr, *from_device = nullptr;
  uint64_t* seed = nullptr;
  for (void** p : {&in, &by_value, &from_device}) check(cudaMalloc(p, n * 4), "cudaMalloc");
  check(cudaMalloc(reinterpret_cast<void**>(&seed), sizeof(uint64_t)), "cudaMalloc");
  check(cudaMemcpy(in, x.data(), n * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
  check(cudaMemcpy(seed, &step, sizeof step, cudaMemcpyHostToDevice), "cudaMemcpy");
  auto get = [&](void* p) {
    std::vector<float> v(n);
    check(cudaMemcpy(v.data(), p, n * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
    return v;
  };
  dropout_forward(rate, step ^ salt, in, by_value, n, CUDA_R_32F, nullptr);
  dropout_forward(rate, {seed, salt}, in, from_device, n, CUDA_R_32F, nullptr);
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const std::vector<float> first = get(from_device);
  EXPECT_EQ(first, get(by_value));
  const uint64_t next = step + 1;
  check(cudaMemcpy(seed, &next, sizeof next, cudaMemcpyHostToDevice), "cudaMemcpy");
  dropout_forward(rate, {seed, salt}, in, from_device, n, CUDA_R_32F, nullptr);
  dropout_forward(rate, next ^ salt, in, by_value, n, CUDA_R_32F, nullptr);
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const std::vector<float> second = get(from_device);
  EXPECT_EQ(second, get(by_value));
  EXPECT_NE(second, first);
  for (void* p : {in, by_value, from_device, static_cast<void*>(seed)}) cudaFree(p);
}

}  // namespace
