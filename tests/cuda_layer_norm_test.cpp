// The cuda plugin's layer normalization against a double-precision reference on a GPU: the forward (and its kept
// mean and 1/σ), dx, dgamma and dbeta, float32 and float16; the reference's own gradients checked by central
// differences first, so that the formula both share is not taken on trust.
#include "cuda_check.hpp"
#include "device_buffers.hpp"
#include "layer_norm.hpp"
#include "require_gpu.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace cuda_plugin;

namespace {

// A row's mean and 1/σ as Keras's layer norm takes them (biased variance, epsilon inside the root), in double.
std::pair<double, double> mean_and_rstd(const std::vector<double>& x, double epsilon) {
  double mean = 0, var = 0;
  for (double v : x) mean += v;
  mean /= x.size();
  for (double v : x) var += (v - mean) * (v - mean);
  var /= x.size();
  return {mean, 1 / std::sqrt(var + epsilon)};
}

// Keras's layer norm of one row, in double.
std::vector<double> normalise(const std::vector<double>& x, const std::vector<double>& gamma,
                              const std::vector<double>& beta, double epsilon) {
  const auto [mean, r] = mean_and_rstd(x, epsilon);
  std::vector<double> y(x.size());
  for (size_t j = 0; j < x.size(); ++j) y[j] = (x[j] - mean) * r * gamma[j] + beta[j];
  return y;
}

// d(Σ dy·y)/dx and the parameters' per-row terms, analytically.
void row_gradients(const std::vector<double>& x, const std::vector<double>& gamma, const std::vector<double>& dy,
                   double epsilon, std::vector<double>& dx, std::vector<double>& dgamma, std::vector<double>& dbeta) {
  const size_t d = x.size();
  const auto [mean, r] = mean_and_rstd(x, epsilon);
  double mg = 0, mgx = 0;
  for (size_t j = 0; j < d; ++j) mg += dy[j] * gamma[j], mgx += dy[j] * gamma[j] * (x[j] - mean) * r;
  mg /= d, mgx /= d;
  dx.resize(d);
  for (size_t j = 0; j < d; ++j) {
    const double xhat = (x[j] - mean) * r;
    dx[j] = r * (dy[j] * gamma[j] - mg - xhat * mgx);
    dgamma[j] += dy[j] * xhat;
    dbeta[j] += dy[j];
  }
}

TEST(CudaLayerNormReference, ItsGradientIsTheDerivative) {
  std::mt19937 rng(8);
  std::normal_distribution<double> n(0, 1);
  const size_t d = 17;
  std::vector<double> x(d), gamma(d), beta(d), dy(d);
  for (size_t j = 0; j < d; ++j) x[j] = n(rng), gamma[j] = 1 + 0.3 * n(rng), beta[j] = n(rng), dy[j] = n(rng);
  std::vector<double> dx, dgamma(d, 0), dbeta(d, 0);
  row_gradients(x, gamma, dy, 1e-3, dx, dgamma, dbeta);
  auto loss = [&](const std::vector<double>& xs) {
    const auto y = normalise(xs, gamma, beta, 1e-3);
    double s = 0;
    for (size_t j = 0; j < d; ++j) s += dy[j] * y[j];
    return s;
  };
  for (size_t k = 0; k < d; ++k) {
    auto plus = x, minus = x;
    plus[k] += 1e-6, minus[k] -= 1e-6;
    EXPECT_NEAR(dx[k], (loss(plus) - loss(minus)) / 2e-6, 1e-6) << k;
  }
}

struct NormCase {
  int64_t features;
  bool half;
  const char* name;
};

class CudaLayerNorm : public ::testing::TestWithParam<NormCase> {};

TEST_P(CudaLayerNorm, MatchesTheReference) {
  RAMJET_REQUIRE_GPU();
  const NormCase c = GetParam();
  const int64_t rows = 33, d = c.features;
  const float epsilon = 1e-3f;
  std::mt19937 rng(9);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> x(rows * d), dy(rows * d), gamma(d), beta(d);
  for (auto& v : x) v = 2.0f + 3.0f * n(rng);  // off-centre: the two-pass variance matters
  for (auto& v : dy) v = n(rng);
  for (int64_t j = 0; j < d; ++j) gamma[j] = 1.0f + 0.3f * n(rng), beta[j] = n(rng);
  ramjet::test::DeviceBuffers act(c.half), var(false);
  void* gx = act.upload(x);
  void* gdy = act.upload(dy);
  void* gy = act.empty(rows * d);
  void* gdx = act.empty(rows * d);
  auto* ggamma = static_cast<float*>(var.upload(gamma));
  auto* gbeta = static_cast<float*>(var.upload(beta));
  auto* mean = static_cast<float*>(var.empty(rows));
  auto* rstd = static_cast<float*>(var.empty(rows));
  auto* dgamma = static_cast<float*>(var.empty(d));
  auto* dbeta = static_cast<float*>(var.empty(d));
  const cudaDataType_t dtype = c.half ? CUDA_R_16F : CUDA_R_32F;
  layer_norm_forward(gx, ggamma, gbeta, gy, mean, rstd, rows, d, epsilon, dtype, nullptr);
  layer_norm_backward(gx, gdy, ggamma, mean, rstd, gdx, dgamma, dbeta, rows, d, dtype, nullptr);
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const auto y = act.download(gy, rows * d), dx = act.download(gdx, rows * d);
  const auto dg = var.download(dgamma, d), db = var.download(dbeta, d);
  std::vector<double> want_dgamma(d, 0), want_dbeta(d, 0);
  const double tolerance = c.half ? 1e-2 : 1e-4;
  size_t bad_y = 0, bad_dx = 0;
  for (int64_t i = 0; i < rows; ++i) {
    std::vector<double> xr(x.begin() + i * d, x.begin() + (i + 1) * d), dyr(dy.begin() + i * d, dy.begin() + (i + 1) * d);
    const std::vector<double> g(gamma.begin(), gamma.end()), b(beta.begin(), beta.end());
    const auto yr = normalise(xr, g, b, epsilon);
    std::vector<double> dxr;
    row_gradients(xr, g, dyr, epsilon, dxr, want_dgamma, want_dbeta);
    for (int64_t j = 0; j < d; ++j) {
      bad_y += std::fabs(y[i * d + j] - yr[j]) > tolerance * std::max(1.0, std::fabs(yr[j]));
      bad_dx += std::fabs(dx[i * d + j] - dxr[j]) > tolerance * std::max(1.0, std::fabs(dxr[j]));
    }
  }
  EXPECT_EQ(bad_y, 0u);
  EXPECT_EQ(bad_dx, 0u);
  size_t bad_params = 0;
  for (int64_t j = 0; j < d; ++j) {
    bad_params += std::fabs(dg[j] - want_dgamma[j]) > tolerance * std::max(1.0, std::fabs(want_dgamma[j]));
    bad_params += std::fabs(db[j] - want_dbeta[j]) > tolerance * std::max(1.0, std::fabs(want_dbeta[j]));
  }
  EXPECT_EQ(bad_params, 0u);
}

INSTANTIATE_TEST_SUITE_P(Kinds, CudaLayerNorm,
                         ::testing::Values(NormCase{128, false, "f32_128"}, NormCase{1000, false, "f32_1000"},
                                           NormCase{128, true, "f16_128"}),
                         [](const ::testing::TestParamInfo<NormCase>& info) { return std::string(info.param.name); });

}  // namespace
