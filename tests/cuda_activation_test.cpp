// The cuda plugin's activations, forward and backward, against double-precision references of Keras's
// definitions, float32 and float16, on a GPU; an unknown name's error everywhere.
#include "activation.hpp"
#include "cuda_check.hpp"
#include "device_buffers.hpp"
#include "require_gpu.hpp"

#include <ramjet/sdk/error.hpp>

#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace cuda_plugin;

namespace {

TEST(CudaActivation, AnUnknownNameIsRefusedWithTheKnownOnes) {
  try {
    activation_named("selu");
    FAIL() << "no throw";
  } catch (const ramjet::Error& e) {
    EXPECT_EQ(e.status(), RAMJET_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(e.what()).find("'selu'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("leaky_relu"), std::string::npos) << e.what();
  }
  EXPECT_EQ(activation_named("gelu"), Activation::gelu);
}

// Keras's definitions in double: (f(x), f'(x)).
std::pair<double, double> reference(const std::string& name, double alpha, double x) {
  const double s = 1.0 / (1.0 + std::exp(-x));
  if (name == "linear") return {x, 1.0};
  if (name == "relu") return {std::max(x, 0.0), x > 0 ? 1.0 : 0.0};
  if (name == "relu6") return {std::min(std::max(x, 0.0), 6.0), x > 0 && x < 6 ? 1.0 : 0.0};
  if (name == "sigmoid") return {s, s * (1 - s)};
  if (name == "tanh") return {std::tanh(x), 1 - std::tanh(x) * std::tanh(x)};
  if (name == "gelu") {
    const double cdf = 0.5 * (1 + std::erf(x / std::sqrt(2.0)));
    return {x * cdf, cdf + x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI)};
  }
  if (name == "swish") return {x * s, s + x * s * (1 - s)};
  if (name == "elu") return {x > 0 ? x : alpha * std::expm1(x), x > 0 ? 1.0 : alpha * std::exp(x)};
  if (name == "softplus") return {std::max(x, 0.0) + std::log1p(std::exp(-std::fabs(x))), s};
  if (name == "leaky_relu") return {x > 0 ? x : alpha * x, x > 0 ? 1.0 : alpha};
  ADD_FAILURE() << name;
  return {0, 0};
}

struct ActivationCase {
  const char* name;
  cudaDataType_t dtype;
};

class CudaActivations : public ::testing::TestWithParam<ActivationCase> {};

TEST_P(CudaActivations, ForwardAndBackwardMatchKerasDefinitions) {
  RAMJET_REQUIRE_GPU();
  const ActivationCase c = GetParam();
  const bool half = c.dtype == CUDA_R_16F;
  const float alpha = 0.3f;
  std::vector<float> x{0.0f, -0.0f, 1e-4f, -1e-4f, 5.99f, 6.01f, 30.0f, -30.0f, 11.0f, -11.0f};
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-8.0f, 8.0f);
  while (x.size() < 5000) x.push_back(u(rng));
  std::vector<float> dy(x.size());
  for (auto& v : dy) v = u(rng) / 8.0f;
  const size_t n = x.size();
  ramjet::test::DeviceBuffers dev(half);
  void* dx_in = dev.upload(x);
  void* ddy = dev.upload(dy);
  void* y = dev.empty(n);
  void* dx = dev.empty(n);
  const Activation f = activation_named(c.name);
  activation_forward(f, alpha, dx_in, y, static_cast<int64_t>(n), c.dtype, nullptr);
  activation_backward(f, alpha, dx_in, ddy, dx, static_cast<int64_t>(n), c.dtype, nullptr);
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const std::vector<float> got_y = dev.download(y, n), got_dx = dev.download(dx, n);
  // float32: a few ulps of the transcendental functions, and for derivatives like 1 − tanh² near ±1 the
  // cancellation of an ulp of 1 (times |dy| ≤ 1); float16: the output's rounding.
  const double rel = half ? 1e-3 : 2e-6, abs = half ? 1e-4 : 5e-7;
  size_t bad_y = 0, bad_dx = 0;
  for (size_t i = 0; i < n; ++i) {
    const auto [fy, fd] = reference(c.name, alpha, x[i]);
    bad_y += std::fabs(got_y[i] - fy) > rel * std::fabs(fy) + abs;
    bad_dx += std::fabs(got_dx[i] - dy[i] * fd) > rel * std::fabs(dy[i] * fd) + abs;
  }
  EXPECT_EQ(bad_y, 0u) << c.name << " forward";
  EXPECT_EQ(bad_dx, 0u) << c.name << " backward";
}

std::vector<ActivationCase> every_activation() {
  std::vector<ActivationCase> out;
  for (const char* name : {"linear", "relu", "relu6", "sigmoid", "tanh", "gelu", "swish", "elu", "softplus", "leaky_relu"})
    for (cudaDataType_t dtype : {CUDA_R_32F, CUDA_R_16F}) out.push_back({name, dtype});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Every, CudaActivations, ::testing::ValuesIn(every_activation()),
                         [](const ::testing::TestParamInfo<ActivationCase>& info) {
                           return std::string(info.param.name) + (info.param.dtype == CUDA_R_16F ? "_f16" : "_f32");
                         });

}  // namespace
