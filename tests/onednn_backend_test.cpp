// The oneDNN "cpu" backend through the C ABI: forward values against naive loops (NHWC, HWIO), every op's
// gradients against central differences of the loss, training, state round-trips, and errors that name the node.
#include "ramjet/core/components.hpp"
#include "ramjet/core/example.hpp"
#include "ramjet/core/failure.hpp"
#include "ramjet/core/host_api.hpp"
#include "ramjet/core/tensor.hpp"
#include "onednn_harness.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <random>

using namespace ramjet::core;
using namespace ramjet::test::cpu_backend;

namespace {

json adam_options(int64_t batch) {
  return {{"batch", batch}, {"precision", "float32"},
          {"optimizer", {{"type", "adam"}, {"beta_1", 0.9}, {"beta_2", 0.999}, {"epsilon", 1e-7}}}};
}

// Every parameter of the graph, uniform in [-scale, scale].
Example random_params(const json& graph, uint32_t seed, float scale = 0.5f) {
  std::mt19937 rng(seed);
  Example e;
  for (const auto& [name, spec] : graph["params"].items()) {
    const Shape shape = spec["shape"].get<Shape>();
    put(e, name, shape, uniform(static_cast<size_t>(count_of(shape)), rng, -scale, scale));
  }
  return e;
}

// ---- gradient check ---------------------------------------------------------------------------------------

struct GradCheck {
  double tolerance = 1e-2;  // relative error of each parameter's gradient (as a vector)
  double eps = 2e-3;        // central-difference step (also tried at half of it)
  size_t samples = 48;      // entries checked per parameter (all when fewer)
  float param_scale = 0.5f;
};

// Backward's gradients against central differences (f(p + h) - f(p - h)) / 2h of the forward's loss, in double,
// for every parameter; each parameter's checked entries are compared as one vector. The difference is taken at
// h = eps and h = eps / 2: where the two disagree, the step crossed a kink (relu, max, l1) and the entry says
// nothing about the gradient, so it is left out (at most half may be). A wrong gradient still disagrees with both.
void expect_gradients_match(const json& graph, Example inputs, int64_t batch, const GradCheck& c = {}) {
  Harness h;
  const Status compiled = h.compile(graph, adam_options(batch));
  ASSERT_TRUE(compiled.ok()) << compiled.message;
  Example params = random_params(graph, 1234, c.param_scale);
  ASSERT_TRUE(h.set_state("parameters", params).ok());
  Example out;
  ASSERT_TRUE(h.forward(inputs, out, true).ok());
  const Status b = h.backward();
  ASSERT_TRUE(b.ok()) << b.message;
  Example grads = h.state("gradients");

  auto loss_with = [&](float* p, float value) -> double {
    const float saved = *p;
    *p = value;
    EXPECT_TRUE(h.set_state("parameters", params).ok());
    *p = saved;
    Example o;
    const Status s = h.forward(inputs, o, true);
    EXPECT_TRUE(s.ok()) << s.message;
    return scalar(o, "loss");
  };
  auto central = [&](float* p, double step) {
    return (loss_with(p, *p + static_cast<float>(step)) - loss_with(p, *p - static_cast<float>(step))) / (2 * step);
  };
  std::mt19937 rng(99);
  for (auto& entry : params.entries) {
    const std::string& name = entry.name;
    if (name.find("/moving_") != std::string::npos) continue;  // batch_norm statistics: no gradient
    if (grads.find(name) == nullptr) {
      ADD_FAILURE() << name << ": no gradient";
      continue;
    }
    float* p = static_cast<float*>(entry.tensor->dl_tensor.data);
    const size_t n = static_cast<size_t>(element_count(entry.tensor->dl_tensor));
    std::vector<size_t> idx(n);
    for (size_t i = 0; i < n; ++i) idx[i] = i;
    std::shuffle(idx.begin(), idx.end(), rng);
    idx.resize(std::min(n, c.samples));
    const std::vector<float> g = values(grads, name);
    double diff2 = 0, g2 = 0, fd2 = 0;
    size_t kinks = 0;
    for (size_t i : idx) {
      const double wide = central(p + i, c.eps), fd = central(p + i, c.eps / 2);
      if (std::fabs(wide - fd) > 1e-2 * std::max(std::fabs(wide), std::fabs(fd)) + 1e-4) {
        ++kinks;
        continue;
      }
      diff2 += (fd - g[i]) * (fd - g[i]);
      g2 += static_cast<double>(g[i]) * g[i];
      fd2 += fd * fd;
    }
    EXPECT_TRUE(h.set_state("parameters", params).ok());
    EXPECT_LE(kinks, idx.size() / 2) << name << ": too many steps across kinks";
    const double scale = std::sqrt(std::max(g2, fd2));
    EXPECT_GT(scale, 1e-4) << name << ": the loss does not depend on it, so the check would prove nothing";
    EXPECT_LT(std::sqrt(diff2) / scale, c.tolerance)
        << name << ": |backward - finite differences| / |gradient| over " << idx.size() - kinks << " entries";
  }
}

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

void expect_near_all(const std::vector<float>& got, const std::vector<float>& want, double tol, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::fabs(got[i] - want[i]) > tol * (1.0 + std::fabs(want[i])) && bad++ < 5)
      ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << ", want " << want[i];
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

// ---- gradients against finite differences -----------------------------------------------------------------

TEST(OnednnGradients, Dense) {
  json g = Ir().input("x", {5}).dense("d1", "x", 5, 6, "tanh").dense("d2", "d1", 6, 3).classifier("d2");
  expect_gradients_match(g, batch_of({5}, 4, 3, 1), 4);
}

TEST(OnednnGradients, DenseWithoutBiasAndFusedRelu) {
  json g = Ir().input("x", {6}).dense("d1", "x", 6, 8, "relu", false).dense("d2", "d1", 8, 3).classifier("d2");
  expect_gradients_match(g, batch_of({6}, 5, 3, 2), 5);
}

class OnednnConvGradients : public ::testing::TestWithParam<json> {};

// conv_a (parameters) -> the conv under test -> flatten -> dense: conv_a's gradients prove the tested conv's
// input gradient.
TEST_P(OnednnConvGradients, MatchFiniteDifferences) {
  json attrs = GetParam();
  const int64_t C = 4, H = 7, W = 7;
  const auto k = attrs["kernel"].get<Shape>();
  const auto s = attrs.value("strides", Shape{1, 1});
  const auto p = attrs.value("padding", Shape{0, 0, 0, 0});
  const auto d = attrs.value("dilation", Shape{1, 1});
  const int64_t F = attrs["filters"];
  const int64_t OH = (H + p[0] + p[1] - ((k[0] - 1) * d[0] + 1)) / s[0] + 1;
  const int64_t OW = (W + p[2] + p[3] - ((k[1] - 1) * d[1] + 1)) / s[1] + 1;
  json g = Ir()
               .input("x", {H, W, 2})
               .conv("conv_a", "x", 2, {H, W, C},
                     {{"filters", C}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}, {"activation", "tanh"}})
               .conv("conv_b", "conv_a", C, {OH, OW, F}, attrs)
               .node("flat", "flatten", {"conv_b"}, {OH * OW * F})
               .dense("out", "flat", OH * OW * F, 3)
               .classifier("out");
  expect_gradients_match(g, batch_of({H, W, 2}, 3, 3, 3), 3);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, OnednnConvGradients,
    ::testing::Values(json{{"filters", 3}, {"kernel", {3, 3}}},
                      json{{"filters", 4}, {"kernel", {3, 2}}, {"strides", {2, 1}}, {"padding", {1, 0, 2, 1}},
                           {"activation", "relu"}},
                      json{{"filters", 4}, {"kernel", {3, 3}}, {"dilation", {2, 2}}, {"padding", {2, 2, 2, 2}},
                           {"activation", "sigmoid"}},
                      json{{"filters", 6}, {"kernel", {3, 3}}, {"groups", 2}, {"activation", "gelu"}},
                      json{{"filters", 8}, {"kernel", {3, 3}}, {"groups", 4}, {"padding", {1, 1, 1, 1}},
                           {"activation", "relu6"}},  // depthwise, multiplier 2
                      json{{"filters", 3}, {"kernel", {2, 2}}, {"use_bias", false}, {"activation", "tanh"}}));

class OnednnPoolGradients : public ::testing::TestWithParam<std::pair<std::string, json>> {};

TEST_P(OnednnPoolGradients, MatchFiniteDifferences) {
  const auto& [op, attrs] = GetParam();
  const int64_t H = 6, W = 5, C = 4;
  Shape out{C};
  if (op == "max_pool" || op == "avg_pool") {
    const auto k = attrs["pool"].get<Shape>();
    const auto s = attrs["strides"].get<Shape>();
    const auto p = attrs["padding"].get<Shape>();
    out = {(H + p[0] + p[1] - k[0]) / s[0] + 1, (W + p[2] + p[3] - k[1]) / s[1] + 1, C};
  }
  json g = Ir()
               .input("x", {H, W, 2})
               .conv("conv", "x", 2, {H, W, C}, {{"filters", C}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}})
               .node("pool", op, {"conv"}, out, attrs)
               .node("flat", "flatten", {"pool"}, {count_of(out)})
               .dense("fc", "flat", count_of(out), 3)
               .classifier("fc");
  expect_gradients_match(g, batch_of({H, W, 2}, 3, 3, 4), 3);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, OnednnPoolGradients,
    ::testing::Values(std::make_pair(std::string("max_pool"),
                                     json{{"pool", {2, 2}}, {"strides", {2, 2}}, {"padding", {0, 0, 0, 1}}}),
                      std::make_pair(std::string("max_pool"),
                                     json{{"pool", {3, 3}}, {"strides", {1, 2}}, {"padding", {1, 1, 1, 1}}}),
                      std::make_pair(std::string("avg_pool"),
                                     json{{"pool", {3, 2}}, {"strides", {2, 1}}, {"padding", {1, 1, 0, 1}}}),
                      std::make_pair(std::string("global_avg_pool"), json::object()),
                      std::make_pair(std::string("global_max_pool"), json::object())));

TEST(OnednnGradients, ReshapeBetweenConvolutions) {
  // conv [6, 6, 4] -> reshape [12, 3, 4] -> conv -> reshape [-1] -> dense: the first reshape reads a blocked
  // layout (reorders), the second a row-major one (shares the buffer).
  json g = Ir()
               .input("x", {6, 6, 2})
               .conv("c1", "x", 2, {6, 6, 4}, {{"filters", 4}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}})
               .node("r1", "reshape", {"c1"}, {12, 3, 4}, {{"shape", {12, 3, 4}}})
               .conv("c2", "r1", 4, {10, 2, 3}, {{"filters", 3}, {"kernel", {3, 2}}, {"activation", "tanh"}})
               .node("r2", "reshape", {"c2"}, {60}, {{"shape", {-1}}})
               .dense("fc", "r2", 60, 3)
               .classifier("fc");
  expect_gradients_match(g, batch_of({6, 6, 2}, 2, 3, 5), 2);
}

TEST(OnednnGradients, ReshapeOfAValueReadTwice) {
  // d1 feeds a reshape and the add: the reshape may not hand d1's gradient buffer to its readers.
  json g = Ir()
               .input("x", {5})
               .dense("d1", "x", 5, 6, "tanh")
               .node("r", "reshape", {"d1"}, {2, 3}, {{"shape", {2, 3}}})
               .node("f", "flatten", {"r"}, {6})
               .node("sum", "add", {"f", "d1"}, {6})
               .dense("d2", "sum", 6, 3)
               .classifier("d2");
  expect_gradients_match(g, batch_of({5}, 4, 3, 13), 4);
}

class OnednnActivationGradients : public ::testing::TestWithParam<std::string> {};

TEST_P(OnednnActivationGradients, StandaloneNodeMatchesFiniteDifferences) {
  json g = Ir()
               .input("x", {6})
               .dense("d1", "x", 6, 7)
               .node("act", "activation", {"d1"}, {7}, {{"activation", GetParam()}})
               .dense("d2", "act", 7, 3)
               .classifier("d2");
  expect_gradients_match(g, batch_of({6}, 4, 3, 6), 4);
}

INSTANTIATE_TEST_SUITE_P(Names, OnednnActivationGradients,
                         ::testing::Values("linear", "relu", "relu6", "sigmoid", "tanh", "gelu", "elu", "swish",
                                           "softplus"));

TEST(OnednnGradients, ResidualAddWithFanOut) {
  // c1 feeds both c2 and the add: its gradient is the sum of two contributions.
  json g = Ir()
               .input("x", {5, 5, 3})
               .conv("c1", "x", 3, {5, 5, 4}, {{"filters", 4}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}, {"activation", "tanh"}})
               .conv("c2", "c1", 4, {5, 5, 4}, {{"filters", 4}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}, {"activation", "relu"}})
               .node("sum", "add", {"c1", "c2"}, {5, 5, 4})
               .node("gap", "global_avg_pool", {"sum"}, {4})
               .dense("fc", "gap", 4, 3)
               .classifier("fc");
  expect_gradients_match(g, batch_of({5, 5, 3}, 3, 3, 7), 3);
}

TEST(OnednnGradients, AddOfInputAndLayer) {
  // One addend is a graph input (no gradient wanted), in nhwc, the other a conv output.
  json g = Ir()
               .input("x", {4, 4, 16})
               .conv("c", "x", 16, {4, 4, 16}, {{"filters", 16}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}})
               .node("sum", "add", {"x", "c"}, {4, 4, 16})
               .node("flat", "flatten", {"sum"}, {256})
               .dense("fc", "flat", 256, 3)
               .classifier("fc");
  expect_gradients_match(g, batch_of({4, 4, 16}, 2, 3, 8), 2, GradCheck{1e-2, 2e-3, 48, 0.2f});
}

TEST(OnednnGradients, Softmax) {
  json g = Ir()
               .input("x", {5})
               .dense("d1", "x", 5, 6)
               .node("sm", "softmax", {"d1"}, {6})
               .dense("d2", "sm", 6, 3)
               .classifier("d2");
  expect_gradients_match(g, batch_of({5}, 4, 3, 9), 4, GradCheck{1e-2, 2e-3, 48, 1.5f});
}

TEST(OnednnGradients, DropoutWithAFixedSeed) {
  json g = Ir()
               .input("x", {8})
               .dense("d1", "x", 8, 16, "tanh")
               .node("drop", "dropout", {"d1"}, {16}, {{"rate", 0.5}})
               .dense("d2", "drop", 16, 3)
               .classifier("d2");
  expect_gradients_match(g, batch_of({8}, 4, 3, 10), 4);
}

TEST(OnednnGradients, MseAndL1Losses) {
  for (const char* loss : {"mse", "l1"}) {
    SCOPED_TRACE(loss);
    json g = Ir().input("x", {5}).dense("d1", "x", 5, 6, "sigmoid").dense("d2", "d1", 6, 2).regression("d2", loss);
    std::mt19937 rng(12);
    Example in;
    put(in, "x", {4, 5}, uniform(20, rng));
    put(in, "target", {4, 2}, uniform(8, rng, -2.0f, 2.0f));
    expect_gradients_match(g, std::move(in), 4);
  }
}

TEST(OnednnGradients, ConcatOfTwoBranches) {
  // Both branches read c1 (fan-out), and their concatenation is read in NHWC order by flatten.
  json g = Ir()
               .input("x", {5, 5, 2})
               .conv("c1", "x", 2, {5, 5, 3}, {{"filters", 3}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}, {"activation", "tanh"}})
               .conv("c2", "c1", 3, {5, 5, 4}, {{"filters", 4}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}})
               .node("cat", "concat", {"c1", "c2"}, {5, 5, 7}, {{"axis", -1}})
               .node("flat", "flatten", {"cat"}, {175})
               .dense("fc", "flat", 175, 3)
               .classifier("fc");
  expect_gradients_match(g, batch_of({5, 5, 2}, 3, 3, 14), 3);
}

TEST(OnednnGradients, BatchNormOnImagesAndVectors) {
  Ir images;
  // No bias before a batch_norm: it would cancel out (a zero gradient proves nothing).
  images.input("x", {5, 5, 2}).conv("c", "x", 2, {5, 5, 4},
                                    {{"filters", 4}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}, {"use_bias", false}});
  images.batch_norm("bn", "c", {5, 5, 4})
      .node("act", "activation", {"bn"}, {5, 5, 4}, {{"activation", "tanh"}})
      .node("flat", "flatten", {"act"}, {100})
      .dense("fc", "flat", 100, 3);
  expect_gradients_match(images.classifier("fc"), batch_of({5, 5, 2}, 3, 3, 15), 3);

  Ir vectors;
  vectors.input("x", {6}).dense("d1", "x", 6, 5, "linear", false);
  vectors.batch_norm("bn", "d1", {5}).dense("d2", "bn", 5, 3, "linear");
  expect_gradients_match(vectors.classifier("d2"), batch_of({6}, 8, 3, 16), 8);
}

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

TEST(OnednnState, MovingStatisticsHaveNoGradientAndNoOptimizerSlots) {
  Ir ir;
  ir.input("x", {4}).dense("d", "x", 4, 3);
  const json g = ir.batch_norm("bn", "d", {3}).classifier("bn");
  Harness h;
  ASSERT_TRUE(h.compile(g, adam_options(4)).ok());
  Example params = random_params(g, 18);
  ASSERT_TRUE(h.set_state("parameters", params).ok());
  Example batch = batch_of({4}, 4, 3, 19), out;
  ASSERT_TRUE(h.forward(batch, out, true).ok());
  ASSERT_TRUE(h.backward().ok());
  ASSERT_TRUE(h.update(1, 0.1f).ok());
  std::vector<std::string> grads, slots, all;
  for (const auto& e : h.state("gradients").entries) grads.push_back(e.name);
  for (const auto& e : h.state("optimizer").entries) slots.push_back(e.name);
  for (const auto& e : h.state("parameters").entries) all.push_back(e.name);
  EXPECT_EQ(grads, (std::vector<std::string>{"bn/beta", "bn/gamma", "d/bias", "d/kernel"}));
  EXPECT_EQ(slots.size(), 8u);
  EXPECT_EQ(all.size(), 6u) << "the moving statistics are still parameters (checkpoints, export)";
}

// ---- training ---------------------------------------------------------------------------------------------

namespace {

json small_cnn() {
  return Ir()
      .input("x", {8, 8, 1})
      .conv("conv", "x", 1, {6, 6, 4}, {{"filters", 4}, {"kernel", {3, 3}}, {"activation", "relu"}})
      .node("pool", "max_pool", {"conv"}, {3, 3, 4}, {{"pool", {2, 2}}, {"strides", {2, 2}}, {"padding", {0, 0, 0, 0}}})
      .node("flat", "flatten", {"pool"}, {36})
      .dense("fc", "flat", 36, 2)
      .classifier("fc");
}

}  // namespace

TEST(OnednnTraining, SmallCnnLearnsASeparableProblemAndTakesASmallerLastBatch) {
  Harness h(kDefaultThreads);
  const json g = small_cnn();
  ASSERT_TRUE(h.compile(g, adam_options(32)).ok());
  Example params = random_params(g, 3, 0.3f);
  ASSERT_TRUE(h.set_state("parameters", params).ok());
  std::mt19937 rng(21);
  std::vector<float> losses;
  for (int step = 1; step <= 50; ++step) {
    Example batch = separable_batch(32, {8, 8, 1}, rng), out;
    ASSERT_TRUE(h.forward(batch, out, true, static_cast<uint64_t>(step)).ok());
    losses.push_back(scalar(out, "loss"));
    ASSERT_TRUE(h.backward().ok());
    ASSERT_TRUE(h.update(step, 0.01f).ok());
  }
  const double first = (losses[0] + losses[1] + losses[2]) / 3, last = (losses[47] + losses[48] + losses[49]) / 3;
  EXPECT_LT(last, 0.4 * first) << "loss went from " << first << " to " << last;

  // The last batch of an epoch: 10 examples on a program compiled for 32.
  Example small = separable_batch(10, {8, 8, 1}, rng), out;
  const Status f = h.forward(small, out, true, 99);
  ASSERT_TRUE(f.ok()) << f.message;
  const DLTensor* fc = out.find("fc");
  ASSERT_NE(fc, nullptr);
  EXPECT_EQ(fc->shape[0], 10);
  EXPECT_TRUE(std::isfinite(scalar(out, "loss")));
  const DLTensor* correct = out.find("correct");
  ASSERT_NE(correct, nullptr);
  EXPECT_EQ(correct->dtype.code, kDLInt);
  EXPECT_GE(*static_cast<const int32_t*>(correct->data), 8);  // it learned the problem
  ASSERT_TRUE(h.backward().ok());
  ASSERT_TRUE(h.update(51, 0.01f).ok());
}

TEST(OnednnTraining, ASmallerBatchComputesWhatTheFullBatchDoes) {
  Harness h;
  const json g = small_cnn();
  ASSERT_TRUE(h.compile(g, adam_options(16)).ok());
  Example params = random_params(g, 4, 0.3f);
  ASSERT_TRUE(h.set_state("parameters", params).ok());
  std::mt19937 rng(22);
  Example full = separable_batch(16, {8, 8, 1}, rng), out_full, part, out_part;
  const auto x = values(full, "x");
  put(part, "x", {5, 8, 8, 1}, std::vector<float>(x.begin(), x.begin() + 5 * 64));
  ASSERT_TRUE(h.forward(full, out_full, false).ok());
  ASSERT_TRUE(h.forward(part, out_part, false).ok());
  const auto a = values(out_full, "fc"), b = values(out_part, "fc");
  expect_near_all(b, std::vector<float>(a.begin(), a.begin() + 10), 1e-5, "fc of the first 5 examples");
  EXPECT_EQ(out_part.find("loss"), nullptr) << "no labels, no loss";
}

TEST(OnednnTraining, MnistShapedCnnStepTime) {
  // The brief's model: conv 3x3x32 relu -> max_pool 2 -> flatten -> dense 128 relu -> dense 10, batch 128.
  json g = Ir()
               .input("x", {28, 28, 1})
               .conv("conv2d", "x", 1, {26, 26, 32}, {{"filters", 32}, {"kernel", {3, 3}}, {"activation", "relu"}})
               .node("max_pool2d", "max_pool", {"conv2d"}, {13, 13, 32},
                     {{"pool", {2, 2}}, {"strides", {2, 2}}, {"padding", {0, 0, 0, 0}}})
               .node("flatten", "flatten", {"max_pool2d"}, {5408})
               .dense("dense", "flatten", 5408, 128, "relu")
               .dense("dense_1", "dense", 128, 10)
               .classifier("dense_1");
  Harness h(kDefaultThreads);
  ASSERT_TRUE(h.compile(g, adam_options(128)).ok());
  Example params = random_params(g, 5, 0.05f);
  ASSERT_TRUE(h.set_state("parameters", params).ok());
  std::mt19937 rng(23);
  std::vector<Example> batches;
  for (int i = 0; i < 4; ++i) batches.push_back(separable_batch(128, {28, 28, 1}, rng));
  std::vector<double> ms;
  std::vector<float> losses;
  for (int step = 1; step <= 24; ++step) {
    Example out;
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(h.forward(batches[step % 4], out, true, static_cast<uint64_t>(step)).ok());
    ASSERT_TRUE(h.backward().ok());
    ASSERT_TRUE(h.update(step, 0.001f).ok());
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    losses.push_back(scalar(out, "loss"));
  }
  std::vector<double> steady(ms.begin() + 4, ms.end());
  std::sort(steady.begin(), steady.end());
  std::cout << "[ onednn  ] MNIST-shaped CNN, batch 128: median " << steady[steady.size() / 2] << " ms per training step ("
            << steady.front() << " .. " << steady.back() << ")\n";
  RecordProperty("median_step_ms", std::to_string(steady[steady.size() / 2]));
  EXPECT_LT(losses.back(), 0.5 * losses.front()) << "loss went from " << losses.front() << " to " << losses.back();
}

// ---- backward details -------------------------------------------------------------------------------------

namespace {
struct ReadyLog {
  std::vector<std::string> names;
  std::vector<float> first_values;
};
void on_ready(void* user, const char* name, DLTensor* gradient) {
  auto* log = static_cast<ReadyLog*>(user);
  log->names.emplace_back(name);
  log->first_values.push_back(static_cast<const float*>(gradient->data)[0]);
}
}  // namespace

TEST(OnednnBackward, GradReadyScaleAccumulateAndNonfinite) {
  Harness h;
  const json g = small_cnn();
  ASSERT_TRUE(h.compile(g, adam_options(8)).ok());
  Example params = random_params(g, 6, 0.3f);
  ASSERT_TRUE(h.set_state("parameters", params).ok());
  std::mt19937 rng(24);
  Example batch = separable_batch(8, {8, 8, 1}, rng), out;

  Harness fresh;  // backward before any training forward
  ASSERT_TRUE(fresh.compile(g, adam_options(8)).ok());
  EXPECT_EQ(fresh.backward().code, RAMJET_ERR_INVALID_ARGUMENT);
  ASSERT_TRUE(h.forward(batch, out, false).ok());
  EXPECT_EQ(h.backward().code, RAMJET_ERR_INVALID_ARGUMENT) << "an inference forward keeps nothing for backward";

  ASSERT_TRUE(h.forward(batch, out, true).ok());
  ReadyLog log;
  int32_t nonfinite = -1;
  ASSERT_TRUE(h.backward(1.0f, false, &on_ready, &log, &nonfinite).ok());
  EXPECT_EQ(nonfinite, 0);
  // Reverse layer order, each parameter once.
  EXPECT_EQ(log.names, (std::vector<std::string>{"fc/kernel", "fc/bias", "conv/kernel", "conv/bias"}));
  Example g1 = h.state("gradients");
  for (size_t i = 0; i < log.names.size(); ++i) EXPECT_EQ(log.first_values[i], values(g1, log.names[i])[0]);

  ASSERT_TRUE(h.backward(4.0f).ok());
  Example g4 = h.state("gradients");
  ASSERT_TRUE(h.backward(1.0f, true).ok());  // accumulate: 4 + 1
  Example g5 = h.state("gradients");
  for (const char* name : {"conv/kernel", "fc/kernel", "conv/bias"}) {
    const auto a = values(g1, name), b = values(g4, name), c = values(g5, name);
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_NEAR(b[i], 4 * a[i], 1e-5 + 1e-4 * std::fabs(a[i])) << name << i;
      EXPECT_NEAR(c[i], 5 * a[i], 1e-5 + 1e-4 * std::fabs(a[i])) << name << i;
    }
  }

  // A NaN weight poisons the loss and every gradient.
  Example poisoned = random_params(g, 6, 0.3f);
  static_cast<float*>(poisoned.find("fc/kernel")->data)[0] = NAN;
  ASSERT_TRUE(h.set_state("parameters", poisoned).ok());
  ASSERT_TRUE(h.forward(batch, out, true).ok());
  ASSERT_TRUE(h.backward(1.0f, false, nullptr, nullptr, &nonfinite).ok());
  EXPECT_EQ(nonfinite, 1);
}

TEST(OnednnBackward, GradientViewsAreWhatTheOptimizerApplies) {
  // get_state("gradients") hands out views: scaling them in place (as an all-reduce would) changes the step.
  const json g = Ir().input("x", {3}).dense("d", "x", 3, 2).classifier("d");
  Harness h;
  ASSERT_TRUE(h.compile(g, {{"batch", 2}, {"optimizer", {{"type", "sgd"}}}}).ok());
  Example params = random_params(g, 7);
  ASSERT_TRUE(h.set_state("parameters", params).ok());
  Example batch = batch_of({3}, 2, 2, 11), out;
  ASSERT_TRUE(h.forward(batch, out, true).ok());
  ASSERT_TRUE(h.backward().ok());
  Example before = h.state("gradients");
  Example views;
  ASSERT_TRUE(h.get_state("gradients", views).ok());
  for (auto& e : views.entries) {
    float* v = static_cast<float*>(e.tensor->dl_tensor.data);
    for (int64_t i = 0; i < element_count(e.tensor->dl_tensor); ++i) v[i] *= 2.0f;
  }
  ASSERT_TRUE(h.update(1, 0.5f).ok());
  Example after = h.state("parameters");
  for (const char* name : {"d/kernel", "d/bias"}) {
    const auto p0 = values(params, name), p1 = values(after, name), g0 = values(before, name);
    for (size_t i = 0; i < p0.size(); ++i) EXPECT_NEAR(p1[i], p0[i] - 0.5f * 2.0f * g0[i], 1e-6) << name << i;
  }
}

// ---- optimizers and state ---------------------------------------------------------------------------------

TEST(OnednnState, ParametersAndOptimizerSlotsRoundTrip) {
  const json g = small_cnn();
  std::mt19937 rng(25);
  Example b1 = separable_batch(8, {8, 8, 1}, rng), b2 = separable_batch(8, {8, 8, 1}, rng), out;
  for (const char* type : {"adam", "adamw", "sgd"}) {
    SCOPED_TRACE(type);
    json opt = {{"batch", 8}, {"optimizer", {{"type", type}, {"weight_decay", 0.01}}}};
    if (std::string(type) == "sgd") opt["optimizer"].update({{"momentum", 0.9}, {"nesterov", true}});
    Harness a;
    ASSERT_TRUE(a.compile(g, opt).ok());
    Example params = random_params(g, 8, 0.3f);
    ASSERT_TRUE(a.set_state("parameters", params).ok());
    Example got = a.state("parameters");
    for (const auto& e : params.entries) EXPECT_EQ(values(got, e.name), values(params, e.name)) << e.name;
    ASSERT_TRUE(a.forward(b1, out, true).ok());
    ASSERT_TRUE(a.backward().ok());
    ASSERT_TRUE(a.update(1, 0.05f).ok());

    Example slots = a.state("optimizer"), p1 = a.state("parameters");
    std::vector<std::string> names;
    for (const auto& e : slots.entries) names.push_back(e.name);
    const std::vector<std::string> want =
        std::string(type) == "sgd"
            ? std::vector<std::string>{"conv/bias/momentum", "conv/kernel/momentum", "fc/bias/momentum", "fc/kernel/momentum"}
            : std::vector<std::string>{"conv/bias/m", "conv/bias/v", "conv/kernel/m", "conv/kernel/v",
                                       "fc/bias/m",   "fc/bias/v",   "fc/kernel/m",   "fc/kernel/v"};
    EXPECT_EQ(names, want);
    double norm = 0;
    for (float v : values(slots, names[0])) norm += std::fabs(v);
    EXPECT_GT(norm, 0.0) << "the first step filled the slots";

    // A second program restored from the first takes the same next step.
    Harness b;
    ASSERT_TRUE(b.compile(g, opt).ok());
    ASSERT_TRUE(b.set_state("parameters", p1).ok());
    const Status restored = b.set_state("optimizer", slots);
    ASSERT_TRUE(restored.ok()) << restored.message;
    for (Harness* h : {&a, &b}) {
      ASSERT_TRUE(h->forward(b2, out, true).ok());
      ASSERT_TRUE(h->backward().ok());
      ASSERT_TRUE(h->update(2, 0.05f).ok());
    }
    Example pa = a.state("parameters"), pb = b.state("parameters");
    for (const auto& e : pa.entries) EXPECT_EQ(values(pa, e.name), values(pb, e.name)) << e.name;
    Example sa = a.state("optimizer"), sb = b.state("optimizer");
    for (const auto& e : sa.entries) EXPECT_EQ(values(sa, e.name), values(sb, e.name)) << e.name;
  }
}

TEST(OnednnState, AdamStepFollowsKerasFormula) {
  const json g = Ir().input("x", {2}).dense("d", "x", 2, 2).classifier("d");
  Harness h;
  ASSERT_TRUE(h.compile(g, {{"batch", 1}, {"optimizer", {{"type", "adam"}, {"beta_1", 0.8}, {"beta_2", 0.9}, {"epsilon", 1e-3}}}}).ok());
  Example params = random_params(g, 9);
  ASSERT_TRUE(h.set_state("parameters", params).ok());
  Example batch = batch_of({2}, 1, 2, 12), out;
  double m = 0, v = 0, p = values(params, "d/bias")[0];
  for (int step = 1; step <= 3; ++step) {
    ASSERT_TRUE(h.forward(batch, out, true).ok());
    ASSERT_TRUE(h.backward().ok());
    Example grads = h.state("gradients");
    const double grad = values(grads, "d/bias")[0] * 0.5;  // gradient_scale 0.5
    ASSERT_TRUE(h.update(step, 0.1f, 0.5f).ok());
    m = 0.8 * m + 0.2 * grad;
    v = 0.9 * v + 0.1 * grad * grad;
    p -= 0.1 * std::sqrt(1 - std::pow(0.9, step)) / (1 - std::pow(0.8, step)) * m / (std::sqrt(v) + 1e-3);
    Example now = h.state("parameters");
    EXPECT_NEAR(values(now, "d/bias")[0], p, 1e-5) << "step " << step;
  }
}

TEST(OnednnState, SetStateRefusesUnknownNamesAndWrongShapes) {
  Harness h;
  ASSERT_TRUE(h.compile(small_cnn(), adam_options(4)).ok());
  Example unknown;
  put(unknown, "nope/kernel", {2}, {1, 2});
  Status s = h.set_state("parameters", unknown);
  EXPECT_EQ(s.code, RAMJET_ERR_INVALID_ARGUMENT);
  EXPECT_NE(s.message.find("nope/kernel"), std::string::npos) << s.message;
  Example wrong;
  put(wrong, "fc/kernel", {2, 36}, std::vector<float>(72));
  s = h.set_state("parameters", wrong);
  EXPECT_EQ(s.code, RAMJET_ERR_INVALID_ARGUMENT);
  EXPECT_NE(s.message.find("[36, 2]"), std::string::npos) << s.message;
  Example slot;
  put(slot, "fc/kernel/momentum", {36, 2}, std::vector<float>(72));
  EXPECT_EQ(h.set_state("optimizer", slot).code, RAMJET_ERR_INVALID_ARGUMENT) << "adam has no momentum slot";
  Example none;
  EXPECT_EQ(h.get_state("weights", none).code, RAMJET_ERR_INVALID_ARGUMENT);
}

// ---- dropout, taps, errors --------------------------------------------------------------------------------

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

namespace {
struct TapLog {
  std::map<std::string, std::vector<float>> seen;
};
ramjet_status on_tap(void* user, const char* name, const DLTensor* value, ramjet_error*) {
  const float* p = static_cast<const float*>(value->data);
  int64_t n = 1;
  for (int i = 0; i < value->ndim; ++i) n *= value->shape[i];
  static_cast<TapLog*>(user)->seen[name] = std::vector<float>(p, p + n);
  return RAMJET_OK;
}
}  // namespace

TEST(OnednnTaps, SeeActivationsInTheHostLayout) {
  const json g = small_cnn();
  Harness h;
  ASSERT_TRUE(h.compile(g, adam_options(4)).ok());
  Example params = random_params(g, 10, 0.3f);
  ASSERT_TRUE(h.set_state("parameters", params).ok());
  TapLog log;
  ASSERT_TRUE(h.set_taps(json::array({"flat", "fc"}), &on_tap, &log).ok());
  EXPECT_EQ(h.set_taps(json::array({"missing"}), &on_tap, &log).code, RAMJET_ERR_INVALID_ARGUMENT);
  std::mt19937 rng(26);
  Example batch = separable_batch(4, {8, 8, 1}, rng), out;
  ASSERT_TRUE(h.forward(batch, out, false).ok());
  EXPECT_EQ(log.seen["fc"], values(out, "fc"));
  EXPECT_EQ(log.seen["flat"].size(), 4u * 36u);
}

TEST(OnednnErrors, UnsupportedOpNamesTheNode) {
  json g = Ir().input("x", {4}).dense("d", "x", 4, 2).classifier("d");
  g["nodes"].push_back({{"name", "memory"}, {"op", "lstm"}, {"inputs", {"d"}}, {"shape", {2}}});
  Harness h;
  const Status s = h.compile(g, adam_options(2));
  EXPECT_EQ(s.code, RAMJET_ERR_UNSUPPORTED);
  EXPECT_NE(s.message.find("'memory'"), std::string::npos) << s.message;
  EXPECT_NE(s.message.find("lstm"), std::string::npos) << s.message;
  EXPECT_EQ(h.compile(small_cnn(), {{"batch", 2}, {"precision", "mixed_float16"}}).code, RAMJET_ERR_UNSUPPORTED);
  EXPECT_EQ(h.compile(small_cnn(), {{"batch", 2}, {"optimizer", {{"type", "lamb"}}}}).code, RAMJET_ERR_UNSUPPORTED);
  json act = Ir().input("x", {4}).dense("d", "x", 4, 2, "hard_swish").classifier("d");
  const Status a = h.compile(act, adam_options(2));
  EXPECT_EQ(a.code, RAMJET_ERR_UNSUPPORTED);
  EXPECT_NE(a.message.find("'d'"), std::string::npos) << a.message;
}

TEST(OnednnErrors, MalformedGraphsNameTheNode) {
  struct Case {
    const char* what;
    std::function<void(json&)> spoil;
    const char* fragment;
  };
  const std::vector<Case> cases = {
      {"undefined input", [](json& g) { g["nodes"][1]["inputs"] = {"nowhere"}; }, "'pool'"},
      {"wrong declared shape", [](json& g) { g["nodes"][0]["shape"] = {7, 7, 4}; }, "'conv'"},
      {"kernel of the wrong shape", [](json& g) { g["params"]["conv/kernel"]["shape"] = {3, 3, 2, 4}; }, "'conv'"},
      {"undeclared parameter", [](json& g) { g["nodes"][3]["params"]["kernel"] = "ghost"; }, "'fc'"},
      {"missing attribute", [](json& g) { g["nodes"][0]["attrs"].erase("filters"); }, "'conv'"},
      {"out of order", [](json& g) { std::swap(g["nodes"][1], g["nodes"][2]); }, "'flat'"},
      {"duplicate name", [](json& g) { g["nodes"][2]["name"] = "conv"; }, "'conv'"},
      {"no inputs", [](json& g) { g.erase("inputs"); }, "inputs"},
      {"bad loss input", [](json& g) { g["loss"]["input"] = "nothing"; }, "nothing"},
      {"bad padding", [](json& g) { g["nodes"][1]["attrs"]["padding"] = {1, 2}; }, "'pool'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    json g = small_cnn();
    c.spoil(g);
    Harness h;
    const Status s = h.compile(g, adam_options(2));
    EXPECT_EQ(s.code, RAMJET_ERR_INVALID_ARGUMENT) << s.message;
    EXPECT_NE(s.message.find(c.fragment), std::string::npos) << s.message;
  }
}

TEST(OnednnErrors, BadForwardInputs) {
  Harness h;
  ASSERT_TRUE(h.compile(small_cnn(), adam_options(4)).ok());
  Example out;
  Example missing;
  EXPECT_EQ(h.forward(missing, out, false).code, RAMJET_ERR_INVALID_ARGUMENT);
  Example wrong;
  put(wrong, "x", {4, 8, 8, 2}, std::vector<float>(512));
  const Status s = h.forward(wrong, out, false);
  EXPECT_EQ(s.code, RAMJET_ERR_INVALID_ARGUMENT);
  EXPECT_NE(s.message.find("'x'"), std::string::npos) << s.message;
  Example bad_label;
  put(bad_label, "x", {2, 8, 8, 1}, std::vector<float>(128));
  put_labels(bad_label, {0, 2});
  const Status l = h.forward(bad_label, out, true);
  EXPECT_EQ(l.code, RAMJET_ERR_OUT_OF_RANGE);
  EXPECT_NE(l.message.find("label"), std::string::npos) << l.message;
}

TEST(OnednnBackend, ThreadsConfigIsAcceptedAndRefusedWhenNegative) {
  Harness one(json{{"threads", 2}});
  ASSERT_TRUE(one.compile(small_cnn(), adam_options(4)).ok());
  std::mt19937 rng(27);
  Example batch = separable_batch(4, {8, 8, 1}, rng), out;
  EXPECT_TRUE(one.forward(batch, out, true).ok());
  EXPECT_THROW(Harness(json{{"threads", -1}}), InvalidInput);
}
