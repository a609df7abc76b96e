// The oneDNN "cpu" backend's forward values against naive loops (NHWC activations, HWIO kernels): convolutions,
// dense and flatten, pooling, batch_norm's statistics, and dropout's masks.
#include "ramjet/plugin/example.hpp"
#include "onednn_harness.hpp"
#include "onednn_models.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

using namespace ramjet::core;
using namespace ramjet::test::cpu_backend;

namespace {

// ---- naive references (NHWC activations, HWIO kernels) ----------------------------------------------------

struct ConvCase {
  int64_t n, h, w, c, f, kh, kw, sh, sw, pt, pb, pl, pr, dh, dw, groups;
  int64_t oh() const { return (h + pt + pb - ((kh - 1) * dh + 1)) / sh + 1; }
  int64_t ow() const { return (w + pl + pr - ((kw - 1) * dw + 1)) / sw + 1; }
};

std::vector<float> naive_conv(const ConvCase& k, const std::vector<float>& x, const std::vector<float>& wt,
                              const std::vector<float>& bias) {
  const int64_t OH = k.oh(), OW = k.ow(), cg = k.c / k.groups, fg = k.f / k.groups;
  std::vector<float> y(static_cast<size_t>(k.n * OH * OW * k.f));
  for (int64_t b = 0; b < k.n; ++b)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox)
        for (int64_t o = 0; o < k.f; ++o) {
          const int64_t g = o / fg;
          double acc = bias[static_cast<size_t>(o)];
          for (int64_t ky = 0; ky < k.kh; ++ky)
            for (int64_t kx = 0; kx < k.kw; ++kx) {
              const int64_t iy = oy * k.sh - k.pt + ky * k.dh, ix = ox * k.sw - k.pl + kx * k.dw;
              if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
              for (int64_t i = 0; i < cg; ++i)
                acc += static_cast<double>(x[static_cast<size_t>(((b * k.h + iy) * k.w + ix) * k.c + g * cg + i)]) *
                       wt[static_cast<size_t>(((ky * k.kw + kx) * cg + i) * k.f + o)];
            }
          y[static_cast<size_t>(((b * OH + oy) * OW + ox) * k.f + o)] = static_cast<float>(acc);
        }
  return y;
}

}  // namespace

// ---- forward against naive loops --------------------------------------------------------------------------

class OnednnConvForward : public ::testing::TestWithParam<ConvCase> {};

TEST_P(OnednnConvForward, MatchesNaiveNhwcHwioLoop) {
  const ConvCase k = GetParam();
  json attrs = {{"filters", k.f}, {"kernel", {k.kh, k.kw}}, {"strides", {k.sh, k.sw}},
                {"padding", {k.pt, k.pb, k.pl, k.pr}}, {"dilation", {k.dh, k.dw}}, {"groups", k.groups},
                {"use_bias", true}, {"activation", "linear"}};
  json g = Ir().input("x", {k.h, k.w, k.c}).conv("conv", "x", k.c, {k.oh(), k.ow(), k.f}, attrs).inference("conv");
  Harness h;
  const Status s = h.compile(g, {{"batch", k.n}});
  ASSERT_TRUE(s.ok()) << s.message;
  std::mt19937 rng(5);
  const auto x = uniform(static_cast<size_t>(k.n * k.h * k.w * k.c), rng);
  const auto w = uniform(static_cast<size_t>(k.kh * k.kw * (k.c / k.groups) * k.f), rng);
  const auto bias = uniform(static_cast<size_t>(k.f), rng);
  Example params, in, out;
  put(params, "conv/kernel", {k.kh, k.kw, k.c / k.groups, k.f}, w);
  put(params, "conv/bias", {k.f}, bias);
  ASSERT_TRUE(h.set_state("parameters", params).ok());
  put(in, "x", {k.n, k.h, k.w, k.c}, x);
  const Status f = h.forward(in, out, false);
  ASSERT_TRUE(f.ok()) << f.message;
  const DLTensor* t = out.find("conv");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(std::vector<int64_t>(t->shape, t->shape + t->ndim), (Shape{k.n, k.oh(), k.ow(), k.f}));
  expect_near_all(values(out, "conv"), naive_conv(k, x, w, bias), 1e-4, "conv");
}

INSTANTIATE_TEST_SUITE_P(
    Cases, OnednnConvForward,
    ::testing::Values(ConvCase{2, 7, 6, 3, 5, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, 1},     // plain valid
                      ConvCase{2, 9, 8, 4, 6, 3, 2, 2, 1, 1, 0, 2, 1, 1, 2, 2},     // strides, asymmetric padding, dilation, groups
                      ConvCase{1, 8, 8, 16, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},   // blocked layouts
                      ConvCase{2, 7, 7, 8, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 8},     // depthwise
                      ConvCase{2, 6, 5, 4, 8, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 4}));   // depth multiplier 2, dilation 2

TEST(OnednnForward, DenseMatchesNaiveLoopAndFlattenIsNhwcOrder) {
  // conv (blocked layout inside) -> flatten -> dense: flatten must read NHWC order, dense the [in, out] kernel.
  const ConvCase k{3, 5, 4, 16, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  json g = Ir()
               .input("x", {5, 4, 16})
               .conv("conv", "x", 16, {5, 4, 16}, {{"filters", 16}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}})
               .node("flat", "flatten", {"conv"}, {320})
               .dense("fc", "flat", 320, 7)
               .inference("fc");
  g["outputs"] = {"flat", "fc"};
  Harness h;
  ASSERT_TRUE(h.compile(g, {{"batch", 3}}).ok());
  std::mt19937 rng(8);
  const auto x = uniform(3 * 5 * 4 * 16, rng), w = uniform(3 * 3 * 16 * 16, rng), b = uniform(16, rng);
  const auto fw = uniform(320 * 7, rng), fb = uniform(7, rng);
  Example params, in, out;
  put(params, "conv/kernel", {3, 3, 16, 16}, w);
  put(params, "conv/bias", {16}, b);
  put(params, "fc/kernel", {320, 7}, fw);
  put(params, "fc/bias", {7}, fb);
  ASSERT_TRUE(h.set_state("parameters", params).ok());
  put(in, "x", {3, 5, 4, 16}, x);
  ASSERT_TRUE(h.forward(in, out, false).ok());
  const auto conv = naive_conv(k, x, w, b);
  expect_near_all(values(out, "flat"), conv, 1e-4, "flatten");
  std::vector<float> fc(3 * 7);
  for (int n = 0; n < 3; ++n)
    for (int o = 0; o < 7; ++o) {
      double acc = fb[o];
      for (int i = 0; i < 320; ++i) acc += static_cast<double>(conv[n * 320 + i]) * fw[i * 7 + o];
      fc[n * 7 + o] = static_cast<float>(acc);
    }
  expect_near_all(values(out, "fc"), fc, 1e-4, "dense");
}

TEST(OnednnForward, PoolingMatchesNaiveLoops) {
  // 7x6 input, 3x2 window, strides (2, 2), padding [1, 1, 0, 1]: the average excludes the padding (Keras "same").
  const int64_t N = 2, H = 7, W = 6, C = 3, KH = 3, KW = 2, S = 2, PT = 1, PB = 1, PL = 0, PR = 1;
  const int64_t OH = (H + PT + PB - KH) / S + 1, OW = (W + PL + PR - KW) / S + 1;
  const json attrs = {{"pool", {KH, KW}}, {"strides", {S, S}}, {"padding", {PT, PB, PL, PR}}};
  json g = Ir()
               .input("x", {H, W, C})
               .node("max", "max_pool", {"x"}, {OH, OW, C}, attrs)
               .node("avg", "avg_pool", {"x"}, {OH, OW, C}, attrs)
               .node("gap", "global_avg_pool", {"x"}, {C})
               .inference("max");
  g["outputs"] = {"max", "avg", "gap"};
  Harness h;
  const Status s = h.compile(g, {{"batch", N}});
  ASSERT_TRUE(s.ok()) << s.message;
  std::mt19937 rng(11);
  const auto x = uniform(static_cast<size_t>(N * H * W * C), rng);
  Example in, out;
  put(in, "x", {N, H, W, C}, x);
  ASSERT_TRUE(h.forward(in, out, false).ok());
  std::vector<float> mx, av, gap(static_cast<size_t>(N * C), 0.0f);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox)
        for (int64_t c = 0; c < C; ++c) {
          float m = -INFINITY;
          double sum = 0;
          int cnt = 0;
          for (int64_t ky = 0; ky < KH; ++ky)
            for (int64_t kx = 0; kx < KW; ++kx) {
              const int64_t iy = oy * S - PT + ky, ix = ox * S - PL + kx;
              if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
              const float v = x[static_cast<size_t>(((n * H + iy) * W + ix) * C + c)];
              m = std::max(m, v);
              sum += v;
              ++cnt;
            }
          mx.push_back(m);
          av.push_back(static_cast<float>(sum / cnt));
        }
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < H * W; ++i)
      for (int64_t c = 0; c < C; ++c) gap[static_cast<size_t>(n * C + c)] += x[static_cast<size_t>((n * H * W + i) * C + c)] / (H * W);
  expect_near_all(values(out, "max"), mx, 1e-6, "max_pool");
  expect_near_all(values(out, "avg"), av, 1e-5, "avg_pool");
  expect_near_all(values(out, "gap"), gap, 1e-5, "global_avg_pool");
}

// ---- batch_norm and dropout ------------------------------------------------------------------------------

TEST(OnednnForward, BatchNormUsesMovingStatisticsOutsideTrainingAndUpdatesThemInTraining) {
  Ir ir;
  ir.input("x", {2, 2, 3});
  const json g = ir.batch_norm("bn", "x", {2, 2, 3}).inference("bn");
  Harness h;
  const Status s = h.compile(g, {{"batch", 2}});
  ASSERT_TRUE(s.ok()) << s.message;
  const std::vector<float> gamma{1.0f, 2.0f, 0.5f}, beta{0.0f, -1.0f, 3.0f}, mean{0.1f, 0.2f, -0.3f},
      var{1.0f, 4.0f, 0.25f};
  Example params, in, out;
  put(params, "bn/gamma", {3}, gamma);
  put(params, "bn/beta", {3}, beta);
  put(params, "bn/moving_mean", {3}, mean);
  put(params, "bn/moving_variance", {3}, var);
  ASSERT_TRUE(h.set_state("parameters", params).ok());
  std::mt19937 rng(17);
  const auto x = uniform(24, rng);
  put(in, "x", {2, 2, 2, 3}, x);
  ASSERT_TRUE(h.forward(in, out, false).ok());
  std::vector<float> want(24);
  for (size_t i = 0; i < 24; ++i) {
    const size_t c = i % 3;
    want[i] = gamma[c] * (x[i] - mean[c]) / std::sqrt(var[c] + 1e-3f) + beta[c];
  }
  expect_near_all(values(out, "bn"), want, 1e-5, "inference");

  Example train_out;
  ASSERT_TRUE(h.forward(in, train_out, true).ok());
  Example now = h.state("parameters");
  const auto m1 = values(now, "bn/moving_mean"), v1 = values(now, "bn/moving_variance");
  for (size_t c = 0; c < 3; ++c) {
    double sum = 0, sq = 0;
    for (size_t i = c; i < 24; i += 3) sum += x[i];
    const double bm = sum / 8;
    for (size_t i = c; i < 24; i += 3) sq += (x[i] - bm) * (x[i] - bm);
    EXPECT_NEAR(m1[c], 0.9 * mean[c] + 0.1 * bm, 1e-5) << c;
    EXPECT_NEAR(v1[c], 0.9 * var[c] + 0.1 * sq / 8, 1e-5) << c;
  }
}

TEST(OnednnDropout, IdentityInInferenceAndASeededMaskInTraining) {
  const json g = Ir().input("x", {1000}).node("drop", "dropout", {"x"}, {1000}, {{"rate", 0.25}}).inference("drop");
  Harness h;
  ASSERT_TRUE(h.compile(g, {{"batch", 2}}).ok());
  Example in;
  put(in, "x", {2, 1000}, std::vector<float>(2000, 1.0f));
  Example inference, a, b, c;
  ASSERT_TRUE(h.forward(in, inference, false).ok());
  EXPECT_EQ(values(inference, "drop"), std::vector<float>(2000, 1.0f));
  ASSERT_TRUE(h.forward(in, a, true, 1).ok());
  ASSERT_TRUE(h.forward(in, b, true, 1).ok());
  ASSERT_TRUE(h.forward(in, c, true, 2).ok());
  const auto va = values(a, "drop");
  EXPECT_EQ(va, values(b, "drop")) << "same seed, same mask";
  EXPECT_NE(va, values(c, "drop")) << "another seed, another mask";
  int dropped = 0;
  for (float v : va) {
    EXPECT_TRUE(v == 0.0f || std::fabs(v - 1.0f / 0.75f) < 1e-6) << v;
    dropped += v == 0.0f;
  }
  EXPECT_GT(dropped, 400);  // 500 expected of 2000; > 5 sigma either side
  EXPECT_LT(dropped, 600);
}
