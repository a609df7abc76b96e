// The cuda plugin's max_pool and avg_pool on cuDNN (channels-last) against a reference with Keras's rules on a GPU:
// forward and backward, valid and padded ("same" averages exclude the padding), float32 and float16.
#include "cuda_check.hpp"
#include "convolution.hpp"  // check_cudnn
#include "pooling.hpp"
#include "device_buffers.hpp"
#include "require_gpu.hpp"

#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace cuda_plugin;

namespace {

struct PoolCase {
  PoolingProducts::Kind kind;
  int window, stride, pad;
  cudnnDataType_t dtype;
  const char* name;
};

class CudaPooling : public ::testing::TestWithParam<PoolCase> {};

TEST_P(CudaPooling, ForwardAndBackwardMatchKerasRules) {
  RAMJET_REQUIRE_GPU();
  const PoolCase c = GetParam();
  const bool half = c.dtype == CUDNN_DATA_HALF;
  PoolingShape s{2, 8, 7, 3, c.window, c.window, c.stride, c.stride, c.pad, c.pad};
  cudnnHandle_t handle = nullptr;
  check_cudnn(cudnnCreate(&handle), "cudnnCreate", "test");
  PoolingProducts pool(handle, "pool_test", c.kind, s, c.dtype);
  const int oh = pool.out_height(), ow = pool.out_width(), C = s.channels;
  const size_t nx = size_t(s.batch) * s.height * s.width * C, ny = size_t(s.batch) * oh * ow * C;
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  std::vector<float> x(nx), dy(ny);
  for (auto& v : x) v = u(rng);
  for (auto& v : dy) v = u(rng);
  ramjet::test::DeviceBuffers dev(half);
  void* gx = dev.upload(x);
  void* gdy = dev.upload(dy);
  void* gy = dev.empty(ny);
  void* gdx = dev.empty(nx);
  pool.forward(gx, gy);
  pool.backward(gx, gy, gdy, gdx);
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  std::vector<double> want_y(ny), want_dx(nx, 0.0);
  for (int n = 0; n < s.batch; ++n)
    for (int oy = 0; oy < oh; ++oy)
      for (int ox = 0; ox < ow; ++ox)
        for (int ch = 0; ch < C; ++ch) {
          const size_t yi = ((size_t(n) * oh + oy) * ow + ox) * C + ch;
          double best = -DBL_MAX, sum = 0;
          size_t best_i = 0;
          int count = 0;
          for (int r = 0; r < c.window; ++r)
            for (int q = 0; q < c.window; ++q) {
              const int iy = oy * c.stride - c.pad + r, ix = ox * c.stride - c.pad + q;
              if (iy < 0 || iy >= s.height || ix < 0 || ix >= s.width) continue;
              const size_t xi = ((size_t(n) * s.height + iy) * s.width + ix) * C + ch;
              if (x[xi] > best) best = x[xi], best_i = xi;
              sum += x[xi];
              ++count;
            }
          if (c.kind == PoolingProducts::Kind::max) {
            want_y[yi] = best;
            want_dx[best_i] += dy[yi];
          } else {
            want_y[yi] = sum / count;
            for (int r = 0; r < c.window; ++r)
              for (int q = 0; q < c.window; ++q) {
                const int iy = oy * c.stride - c.pad + r, ix = ox * c.stride - c.pad + q;
                if (iy < 0 || iy >= s.height || ix < 0 || ix >= s.width) continue;
                want_dx[((size_t(n) * s.height + iy) * s.width + ix) * C + ch] += dy[yi] / count;
              }
          }
        }
  const double tolerance = half ? 5e-3 : 1e-6;
  auto expect_close = [&](const std::vector<float>& got, const std::vector<double>& want, const char* what) {
    size_t bad = 0;
    for (size_t i = 0; i < got.size(); ++i) bad += std::fabs(got[i] - want[i]) > tolerance * std::max(1.0, std::fabs(want[i]));
    EXPECT_EQ(bad, 0u) << what;
  };
  expect_close(dev.download(gy, ny), want_y, "y");
  expect_close(dev.download(gdx, nx), want_dx, "dx");
  cudnnDestroy(handle);
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, CudaPooling,
    ::testing::Values(PoolCase{PoolingProducts::Kind::max, 2, 2, 0, CUDNN_DATA_FLOAT, "max_2x2_f32"},
                      PoolCase{PoolingProducts::Kind::average, 2, 2, 0, CUDNN_DATA_FLOAT, "avg_2x2_f32"},
                      PoolCase{PoolingProducts::Kind::max, 3, 1, 1, CUDNN_DATA_FLOAT, "max_3x3_same_f32"},
                      PoolCase{PoolingProducts::Kind::average, 3, 1, 1, CUDNN_DATA_FLOAT, "avg_3x3_same_f32"},
                      PoolCase{PoolingProducts::Kind::max, 2, 2, 0, CUDNN_DATA_HALF, "max_2x2_f16"},
                      PoolCase{PoolingProducts::Kind::average, 3, 1, 1, CUDNN_DATA_HALF, "avg_3x3_same_f16"}),
    [](const ::testing::TestParamInfo<PoolCase>& info) { return std::string(info.param.name); });

}  // namespace
