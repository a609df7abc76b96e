// The cuda plugin's conv2d products on cuDNN (channels-last) against a double-precision reference on a GPU: forward
// with bias, backward data, filter and bias, float32 and float16, with and without stride and padding. The error
// naming runs everywhere.
#include "convolution.hpp"
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

TEST(CudaConvolution, ACudnnFailureNamesTheCallAndTheLayer) {
  try {
    check_cudnn(CUDNN_STATUS_BAD_PARAM, "cudnnConvolutionForward", "conv1");
    FAIL() << "no throw";
  } catch (const ramjet::Error& e) {
    EXPECT_EQ(e.status(), RAMJET_ERR_DEVICE);
    EXPECT_EQ(std::string(e.what()).rfind("cudnnConvolutionForward (layer conv1): ", 0), 0u) << e.what();
  }
}

struct ConvCase {
  int stride, pad;
  cudnnDataType_t dtype;
  const char* name;
};

class CudaConvolutionProducts : public ::testing::TestWithParam<ConvCase> {};

TEST_P(CudaConvolutionProducts, MatchTheReference) {
  RAMJET_REQUIRE_GPU();
  const ConvCase c = GetParam();
  const bool half = c.dtype == CUDNN_DATA_HALF;
  ConvolutionShape s{2, 9, 7, 3, 5, 3, 3};
  s.stride_h = s.stride_w = c.stride;
  s.pad_h = s.pad_w = c.pad;
  cudnnHandle_t handle = nullptr;
  check_cudnn(cudnnCreate(&handle), "cudnnCreate", "test");
  ConvolutionProducts conv(handle, "conv_test", s, c.dtype, size_t{64} << 20);
  const int oh = conv.out_height(), ow = conv.out_width();
  EXPECT_EQ(oh, (s.height + 2 * c.pad - 3) / c.stride + 1);
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  auto random = [&](size_t n) {
    std::vector<float> v(n);
    for (auto& x : v) x = u(rng);
    return v;
  };
  const size_t nx = size_t(s.batch) * s.height * s.width * s.in_channels;
  const size_t nw = size_t(s.out_channels) * 3 * 3 * s.in_channels;
  const size_t ny = size_t(s.batch) * oh * ow * s.out_channels;
  std::vector<float> x = random(nx), w = random(nw), b = random(s.out_channels), dy = random(ny);
  ramjet::test::DeviceBuffers dev(half);
  void* gx_in = dev.upload(x);
  void* gw_in = dev.upload(w);
  void* gb_in = dev.upload(b);
  void* gdy = dev.upload(dy);
  void* y = dev.empty(ny);
  void* dx = dev.empty(nx);
  void* dw = dev.empty(nw);
  void* db = dev.empty(s.out_channels);
  void* workspace = dev.bytes(conv.workspace_bytes());
  conv.forward(gx_in, gw_in, gb_in, y, workspace);
  conv.backward_data(gdy, gw_in, dx, workspace);
  conv.backward_filter(gx_in, gdy, dw, db, workspace);
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  // The reference: NHWC activations, the filter [out, kh, kw, in].
  std::vector<double> want_y(ny, 0), want_dx(nx, 0), want_dw(nw, 0), want_db(s.out_channels, 0);
  for (int n = 0; n < s.batch; ++n)
    for (int oy = 0; oy < oh; ++oy)
      for (int ox = 0; ox < ow; ++ox)
        for (int k = 0; k < s.out_channels; ++k) {
          const size_t yi = ((size_t(n) * oh + oy) * ow + ox) * s.out_channels + k;
          double acc = b[k];
          for (int r = 0; r < 3; ++r)
            for (int q = 0; q < 3; ++q) {
              const int iy = oy * c.stride - c.pad + r, ix = ox * c.stride - c.pad + q;
              if (iy < 0 || iy >= s.height || ix < 0 || ix >= s.width) continue;
              for (int ci = 0; ci < s.in_channels; ++ci) {
                const size_t xi = ((size_t(n) * s.height + iy) * s.width + ix) * s.in_channels + ci;
                const size_t wi = ((size_t(k) * 3 + r) * 3 + q) * s.in_channels + ci;
                acc += double(x[xi]) * w[wi];
                want_dx[xi] += double(dy[yi]) * w[wi];
                want_dw[wi] += double(dy[yi]) * x[xi];
              }
            }
          want_y[yi] = acc;
          want_db[k] += dy[yi];
        }
  // Sums of at most 27 (forward, backward data) or 2·oh·ow (filter) terms of magnitude ≤ 1.
  const double tolerance = half ? 2e-2 : 1e-5;
  auto expect_close = [&](const std::vector<float>& got, const std::vector<double>& want, const char* what) {
    size_t bad = 0;
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const double e = std::fabs(got[i] - want[i]) / std::max(1.0, std::fabs(want[i]));
      worst = std::max(worst, e);
      bad += e > tolerance;
    }
    EXPECT_EQ(bad, 0u) << what << ": worst " << worst;
  };
  expect_close(dev.download(y, ny), want_y, "y");
  expect_close(dev.download(dx, nx), want_dx, "dx");
  expect_close(dev.download(dw, nw), want_dw, "dW");
  expect_close(dev.download(db, s.out_channels), want_db, "db");
  cudnnDestroy(handle);
}

INSTANTIATE_TEST_SUITE_P(Kinds, CudaConvolutionProducts,
                         ::testing::Values(ConvCase{1, 1, CUDNN_DATA_FLOAT, "f32_same"},
                                           ConvCase{2, 0, CUDNN_DATA_FLOAT, "f32_stride2_valid"},
                                           ConvCase{1, 1, CUDNN_DATA_HALF, "f16_same"}),
                         [](const ::testing::TestParamInfo<ConvCase>& info) { return std::string(info.param.name); });

}  // namespace
