// The cuda plugin's dense products on cuBLASLt against a double-precision reference, on a GPU when there is one:
// forward with no epilogue, bias, and bias + relu; backward data, weights and bias; float32 and float16 (float32
// accumulation). Odd sizes, so no tile divides them. The error naming runs everywhere.
#include "cuda_check.hpp"
#include "device_buffers.hpp"
#include "require_gpu.hpp"
#include "dense.hpp"

#include <ramjet/sdk/error.hpp>

#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace cuda_plugin;

namespace {

TEST(CudaDense, ACublasFailureNamesTheCallAndTheLayer) {
  try {
    check_cublas(CUBLAS_STATUS_ALLOC_FAILED, "cublasLtMatmul", "dense_1");
    FAIL() << "no throw";
  } catch (const ramjet::Error& e) {
    EXPECT_EQ(e.status(), RAMJET_ERR_OUT_OF_MEMORY);
    EXPECT_EQ(std::string(e.what()).rfind("cublasLtMatmul (layer dense_1): ", 0), 0u) << e.what();
  }
}

struct Case {
  cudaDataType_t dtype;
  DenseEpilogue epilogue;
  const char* name;
};

class CudaDenseProducts : public ::testing::TestWithParam<Case> {};

std::vector<float> random_values(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

// |got - want| within `rel` of the magnitude of the terms that were summed (`scale`), element by element.
void expect_near(const std::vector<float>& got, const std::vector<double>& want, const std::vector<double>& scale,
                 double rel, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  size_t bad = 0;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double error = std::fabs(got[i] - want[i]) / (scale[i] + 1e-3);
    worst = std::max(worst, error);
    bad += error > rel;
  }
  EXPECT_EQ(bad, 0u) << what << ": worst relative error " << worst;
}

TEST_P(CudaDenseProducts, MatchTheReference) {
  RAMJET_REQUIRE_GPU();
  const Case c = GetParam();
  const int64_t M = 70, K = 300, N = 130;
  std::mt19937 rng(11);
  std::vector<float> x = random_values(M * K, rng), w = random_values(K * N, rng), b = random_values(N, rng),
                     dy = random_values(M * N, rng);
  ramjet::test::DeviceBuffers dev(c.dtype == CUDA_R_16F);
  void* dx_ = dev.upload(x);
  void* dw_ = dev.upload(w);
  void* db_ = dev.upload(b);
  void* ddy = dev.upload(dy);
  void* y = dev.empty(M * N);
  void* gx = dev.empty(M * K);
  void* gw = dev.empty(K * N);
  void* gb = dev.empty(N);
  const size_t workspace_bytes = size_t{32} << 20;
  void* workspace = dev.bytes(workspace_bytes);
  cublasLtHandle_t handle = nullptr;
  check_cublas(cublasLtCreate(&handle), "cublasLtCreate", "test");
  {
    DenseProducts dense(handle, "dense_test", M, K, N, c.dtype, c.epilogue, workspace_bytes);
    const bool biased = c.epilogue != DenseEpilogue::none;
    dense.forward(dx_, dw_, biased ? db_ : nullptr, y, workspace, nullptr);
    dense.backward_data(ddy, dw_, gx, workspace, nullptr);
    dense.backward_weights(dx_, ddy, gw, gb, workspace, nullptr);
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }
  cublasLtDestroy(handle);
  // float32 products sum K terms of float32 rounding; float16 outputs are rounded to 11 bits.
  const double rel = c.dtype == CUDA_R_16F ? 2e-3 : 1e-5;
  std::vector<double> want(M * N), scale(M * N);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = c.epilogue == DenseEpilogue::none ? 0.0 : b[j], a = std::fabs(s);
      for (int64_t k = 0; k < K; ++k) s += static_cast<double>(x[i * K + k]) * w[k * N + j], a += std::fabs(x[i * K + k] * w[k * N + j]);
      if (c.epilogue == DenseEpilogue::bias_relu) s = std::max(s, 0.0);
      want[i * N + j] = s;
      scale[i * N + j] = a;
    }
  expect_near(dev.download(y, M * N), want, scale, rel, "y");
  std::vector<double> want_dx(M * K), scale_dx(M * K);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) {
      double s = 0, a = 0;
      for (int64_t j = 0; j < N; ++j) s += static_cast<double>(dy[i * N + j]) * w[k * N + j], a += std::fabs(dy[i * N + j] * w[k * N + j]);
      want_dx[i * K + k] = s;
      scale_dx[i * K + k] = a;
    }
  expect_near(dev.download(gx, M * K), want_dx, scale_dx, rel, "dx");
  std::vector<double> want_dw(K * N), scale_dw(K * N), want_db(N, 0.0), scale_db(N, 0.0);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0, a = 0;
      for (int64_t i = 0; i < M; ++i) s += static_cast<double>(x[i * K + k]) * dy[i * N + j], a += std::fabs(x[i * K + k] * dy[i * N + j]);
      want_dw[k * N + j] = s;
      scale_dw[k * N + j] = a;
    }
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) want_db[j] += dy[i * N + j], scale_db[j] += std::fabs(dy[i * N + j]);
  expect_near(dev.download(gw, K * N), want_dw, scale_dw, rel, "dW");
  expect_near(dev.download(gb, N), want_db, scale_db, rel, "db");
}

INSTANTIATE_TEST_SUITE_P(Kinds, CudaDenseProducts,
                         ::testing::Values(Case{CUDA_R_32F, DenseEpilogue::none, "f32"},
                                           Case{CUDA_R_32F, DenseEpilogue::bias, "f32_bias"},
                                           Case{CUDA_R_32F, DenseEpilogue::bias_relu, "f32_bias_relu"},
                                           Case{CUDA_R_16F, DenseEpilogue::bias, "f16_bias"},
                                           Case{CUDA_R_16F, DenseEpilogue::bias_relu, "f16_bias_relu"}),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

}  // namespace
