// The oneDNN "cpu" backend's layers that make images larger: conv2d_transpose (Keras Conv2DTranspose, kernel
// [kh, kw, filters, in]) and resize (Keras Resizing and UpSampling2D) against naive loops written from TensorFlow's
// definitions, and their gradients against central differences.
#include "ramjet/plugin/example.hpp"
#include "gradient_check.hpp"
#include "onednn_harness.hpp"
#include "onednn_models.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

using namespace ramjet::core;
using namespace ramjet::test::cpu_backend;

namespace {

// ---- naive references (NHWC activations) ------------------------------------------------------------------

// A transposed convolution scatters each input pixel through the kernel: input (iy, ix) lands on output
// (iy * stride - top + ky, ix * stride - left + kx), channel c through kernel[ky][kx][f][c].
struct TransposeCase {
  int64_t n, h, w, c, f, kh, kw, sh, sw, pt, pb, pl, pr;
  std::string activation = "linear";
  int64_t oh() const { return (h - 1) * sh + kh - pt - pb; }
  int64_t ow() const { return (w - 1) * sw + kw - pl - pr; }
};

std::vector<float> naive_conv_transpose(const TransposeCase& k, const std::vector<float>& x,
                                        const std::vector<float>& wt, const std::vector<float>& bias) {
  const int64_t OH = k.oh(), OW = k.ow();
  std::vector<double> y(static_cast<size_t>(k.n * OH * OW * k.f));
  for (int64_t b = 0; b < k.n; ++b)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox)
        for (int64_t o = 0; o < k.f; ++o) y[static_cast<size_t>(((b * OH + oy) * OW + ox) * k.f + o)] = bias[o];
  for (int64_t b = 0; b < k.n; ++b)
    for (int64_t iy = 0; iy < k.h; ++iy)
      for (int64_t ix = 0; ix < k.w; ++ix)
        for (int64_t ky = 0; ky < k.kh; ++ky)
          for (int64_t kx = 0; kx < k.kw; ++kx) {
            const int64_t oy = iy * k.sh - k.pt + ky, ox = ix * k.sw - k.pl + kx;
            if (oy < 0 || oy >= OH || ox < 0 || ox >= OW) continue;
            for (int64_t o = 0; o < k.f; ++o)
              for (int64_t i = 0; i < k.c; ++i)
                y[static_cast<size_t>(((b * OH + oy) * OW + ox) * k.f + o)] +=
                    double(x[static_cast<size_t>(((b * k.h + iy) * k.w + ix) * k.c + i)]) *
                    wt[static_cast<size_t>(((ky * k.kw + kx) * k.f + o) * k.c + i)];
          }
  std::vector<float> out(y.size());
  for (size_t i = 0; i < y.size(); ++i)
    out[i] = static_cast<float>(k.activation == "relu" ? std::max(y[i], 0.0) : y[i]);
  return out;
}

// tf.image.resize with half-pixel centres, one axis: output pixel o of `out` samples input coordinate
// (o + 0.5) * in / out - 0.5 (bilinear: between its two neighbours, clamped to the image) or input pixel
// floor((o + 0.5) * in / out) (nearest).
struct Taps {
  int64_t lo, hi;
  double frac;
};
Taps taps(int64_t o, int64_t in, int64_t out, bool nearest) {
  const double scale = double(in) / double(out);
  if (nearest) {
    const int64_t i = std::min<int64_t>(static_cast<int64_t>(std::floor((o + 0.5) * scale)), in - 1);
    return {i, i, 0.0};
  }
  const double at = (o + 0.5) * scale - 0.5;
  const double fl = std::floor(at);
  return {std::max<int64_t>(static_cast<int64_t>(fl), 0), std::min<int64_t>(static_cast<int64_t>(std::ceil(at)), in - 1),
          at - fl};
}

std::vector<float> naive_resize(const std::vector<float>& x, int64_t n, int64_t h, int64_t w, int64_t c, int64_t oh,
                                int64_t ow, bool nearest) {
  std::vector<float> y(static_cast<size_t>(n * oh * ow * c));
  auto at = [&](int64_t b, int64_t iy, int64_t ix, int64_t ch) {
    return double(x[static_cast<size_t>(((b * h + iy) * w + ix) * c + ch)]);
  };
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox) {
        const Taps ty = taps(oy, h, oh, nearest), tx = taps(ox, w, ow, nearest);
        for (int64_t ch = 0; ch < c; ++ch) {
          const double top = at(b, ty.lo, tx.lo, ch) + (at(b, ty.lo, tx.hi, ch) - at(b, ty.lo, tx.lo, ch)) * tx.frac;
          const double bottom =
              at(b, ty.hi, tx.lo, ch) + (at(b, ty.hi, tx.hi, ch) - at(b, ty.hi, tx.lo, ch)) * tx.frac;
          y[static_cast<size_t>(((b * oh + oy) * ow + ox) * c + ch)] = static_cast<float>(top + (bottom - top) * ty.frac);
        }
      }
  return y;
}

json transpose_attrs(const TransposeCase& k, bool use_bias = true) {
  return {{"filters", k.f},          {"kernel", {k.kh, k.kw}}, {"strides", {k.sh, k.sw}},
          {"padding", {k.pt, k.pb, k.pl, k.pr}}, {"use_bias", use_bias}, {"activation", k.activation}};
}

// conv2d_transpose `name` reading `in` (channels `c`), with its Keras-layout kernel [kh, kw, f, c] and bias.
Ir& add_transpose(Ir& ir, const std::string& name, const std::string& in, const TransposeCase& k,
                  bool use_bias = true) {
  ir.param(name + "/kernel", {k.kh, k.kw, k.f, k.c});
  json params = {{"kernel", name + "/kernel"}};
  if (use_bias) {
    ir.param(name + "/bias", {k.f});
    params["bias"] = name + "/bias";
  }
  return ir.node(name, "conv2d_transpose", {in}, {k.oh(), k.ow(), k.f}, transpose_attrs(k, use_bias), params);
}

}  // namespace

// ---- forward against naive loops --------------------------------------------------------------------------

class OnednnConvTransposeForward : public ::testing::TestWithParam<TransposeCase> {};

TEST_P(OnednnConvTransposeForward, MatchesNaiveScatterLoop) {
  const TransposeCase k = GetParam();
  Ir ir;
  ir.input("x", {k.h, k.w, k.c});
  const json g = add_transpose(ir, "up", "x", k).inference("up");
  Harness h;
  const Status s = h.compile(g, {{"batch", k.n}});
  ASSERT_TRUE(s.ok()) << s.message;
  std::mt19937 rng(5);
  const auto x = uniform(static_cast<size_t>(k.n * k.h * k.w * k.c), rng);
  const auto w = uniform(static_cast<size_t>(k.kh * k.kw * k.c * k.f), rng);
  const auto bias = uniform(static_cast<size_t>(k.f), rng);
  Example params, in, out;
  put(params, "up/kernel", {k.kh, k.kw, k.f, k.c}, w);
  put(params, "up/bias", {k.f}, bias);
  ASSERT_TRUE(h.set_state("parameters", params).ok());
  put(in, "x", {k.n, k.h, k.w, k.c}, x);
  const Status f = h.forward(in, out, false);
  ASSERT_TRUE(f.ok()) << f.message;
  const DLTensor* t = out.find("up");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(std::vector<int64_t>(t->shape, t->shape + t->ndim), (Shape{k.n, k.oh(), k.ow(), k.f}));
  expect_near_all(values(out, "up"), naive_conv_transpose(k, x, w, bias), 1e-4, "conv2d_transpose");
}

INSTANTIATE_TEST_SUITE_P(
    Cases, OnednnConvTransposeForward,
    ::testing::Values(TransposeCase{2, 3, 4, 3, 5, 3, 3, 1, 1, 0, 0, 0, 0},             // valid, stride 1
                      TransposeCase{2, 3, 3, 2, 4, 3, 3, 2, 2, 1, 0, 1, 0, "relu"},     // Keras "same", stride 2
                      TransposeCase{1, 4, 3, 16, 32, 2, 2, 2, 2, 0, 0, 0, 0},           // the U-Net 2x2/2 (taps)
                      TransposeCase{2, 3, 2, 3, 4, 3, 2, 3, 2, 0, 0, 0, 0, "relu"},     // taps, 3x2 stride 3x2
                      TransposeCase{2, 3, 2, 2, 3, 1, 2, 3, 3, 0, -2, 0, -1},           // kernel < stride: rows no input reaches
                      TransposeCase{1, 2, 3, 3, 2, 3, 3, 2, 2, 0, 1, 1, 1}));           // "same", output_padding [1, 0]

struct ResizeCase {
  int64_t n, h, w, c, oh, ow;
  std::string interpolation;
};

class OnednnResizeForward : public ::testing::TestWithParam<ResizeCase> {};

TEST_P(OnednnResizeForward, MatchesTensorFlowHalfPixelSampling) {
  const ResizeCase r = GetParam();
  const json g = Ir()
                     .input("x", {r.h, r.w, r.c})
                     .node("r", "resize", {"x"}, {r.oh, r.ow, r.c},
                           {{"height", r.oh}, {"width", r.ow}, {"interpolation", r.interpolation}})
                     .inference("r");
  Harness h;
  const Status s = h.compile(g, {{"batch", r.n}});
  ASSERT_TRUE(s.ok()) << s.message;
  std::mt19937 rng(9);
  const auto x = uniform(static_cast<size_t>(r.n * r.h * r.w * r.c), rng);
  Example in, out;
  put(in, "x", {r.n, r.h, r.w, r.c}, x);
  const Status f = h.forward(in, out, false);
  ASSERT_TRUE(f.ok()) << f.message;
  expect_near_all(values(out, "r"), naive_resize(x, r.n, r.h, r.w, r.c, r.oh, r.ow, r.interpolation == "nearest"),
                  1e-5, r.interpolation.c_str());
}

INSTANTIATE_TEST_SUITE_P(Cases, OnednnResizeForward,
                         ::testing::Values(ResizeCase{2, 3, 4, 2, 6, 8, "nearest"},    // UpSampling2D(2)
                                           ResizeCase{2, 3, 4, 2, 6, 8, "bilinear"},   // UpSampling2D(2, bilinear)
                                           ResizeCase{1, 3, 5, 16, 7, 4, "bilinear"},  // up one axis, down the other
                                           ResizeCase{1, 3, 5, 3, 7, 4, "nearest"},
                                           ResizeCase{2, 9, 8, 1, 2, 3, "bilinear"}));  // down by more than 2

TEST(OnednnResizeForward, UpsamplingByTwoRepeatsEachPixel) {
  // Keras's UpSampling2D(2) on [[1, 2], [3, 4]]: each pixel becomes a 2x2 block, written out by hand.
  const json g = Ir()
                     .input("x", {2, 2, 1})
                     .node("r", "resize", {"x"}, {4, 4, 1}, {{"height", 4}, {"width", 4}, {"interpolation", "nearest"}})
                     .inference("r");
  Harness h;
  ASSERT_TRUE(h.compile(g, {{"batch", 1}}).ok());
  Example in, out;
  put(in, "x", {1, 2, 2, 1}, {1, 2, 3, 4});
  ASSERT_TRUE(h.forward(in, out, false).ok());
  EXPECT_EQ(values(out, "r"), (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
  // Bilinear at half-pixel centres: row 0 of [1, 2] doubled is 1, 1.25, 1.75, 2 (the edges clamp).
  const json b = Ir()
                     .input("x", {1, 2, 1})
                     .node("r", "resize", {"x"}, {1, 4, 1}, {{"height", 1}, {"width", 4}, {"interpolation", "bilinear"}})
                     .inference("r");
  Harness hb;
  ASSERT_TRUE(hb.compile(b, {{"batch", 1}}).ok());
  Example bin, bout;
  put(bin, "x", {1, 1, 2, 1}, {1, 2});
  ASSERT_TRUE(hb.forward(bin, bout, false).ok());
  expect_near_all(values(bout, "r"), {1.0f, 1.25f, 1.75f, 2.0f}, 1e-6, "bilinear");
}

// ---- gradients against finite differences -----------------------------------------------------------------

class OnednnConvTransposeGradients : public ::testing::TestWithParam<TransposeCase> {};

// conv_a (parameters) -> the transposed conv under test -> flatten -> dense: conv_a's gradients prove the tested
// layer's input gradient.
TEST_P(OnednnConvTransposeGradients, MatchFiniteDifferences) {
  const TransposeCase k = GetParam();
  Ir ir;
  ir.input("x", {k.h, k.w, 2})
      .conv("conv_a", "x", 2, {k.h, k.w, k.c},
            {{"filters", k.c}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}, {"activation", "tanh"}});
  const int64_t outputs = k.oh() * k.ow() * k.f;
  add_transpose(ir, "up", "conv_a", k, k.activation != "relu")
      .node("flat", "flatten", {"up"}, {outputs})
      .dense("out", "flat", outputs, 3);
  expect_gradients_match(ir.classifier("out"), batch_of({k.h, k.w, 2}, 3, 3, 3), 3);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, OnednnConvTransposeGradients,
    ::testing::Values(TransposeCase{3, 4, 3, 3, 4, 3, 3, 1, 1, 0, 0, 0, 0},
                      TransposeCase{3, 3, 3, 3, 4, 3, 3, 2, 2, 1, 0, 1, 0, "relu"},  // "same", stride 2, no bias
                      TransposeCase{3, 3, 2, 2, 3, 2, 2, 2, 2, 0, 0, 0, 0},
                      TransposeCase{3, 3, 2, 2, 3, 1, 2, 3, 3, 0, -2, 0, -1},
                      // kernel = stride, no padding: the taps path (one inner product), with and without bias
                      TransposeCase{3, 2, 3, 3, 2, 3, 3, 3, 3, 0, 0, 0, 0, "tanh"},
                      TransposeCase{3, 3, 2, 2, 3, 1, 2, 1, 2, 0, 0, 0, 0, "relu"}));

class OnednnResizeGradients : public ::testing::TestWithParam<ResizeCase> {};

TEST_P(OnednnResizeGradients, MatchFiniteDifferences) {
  const ResizeCase r = GetParam();
  const int64_t outputs = r.oh * r.ow * r.c;
  const json g = Ir()
                     .input("x", {r.h, r.w, 2})
                     .conv("conv_a", "x", 2, {r.h, r.w, r.c},
                           {{"filters", r.c}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}, {"activation", "tanh"}})
                     .node("r", "resize", {"conv_a"}, {r.oh, r.ow, r.c},
                           {{"height", r.oh}, {"width", r.ow}, {"interpolation", r.interpolation}})
                     .node("flat", "flatten", {"r"}, {outputs})
                     .dense("out", "flat", outputs, 3)
                     .classifier("out");
  expect_gradients_match(g, batch_of({r.h, r.w, 2}, 3, 3, 4), 3);
}

INSTANTIATE_TEST_SUITE_P(Cases, OnednnResizeGradients,
                         ::testing::Values(ResizeCase{3, 3, 4, 3, 6, 8, "nearest"},
                                           ResizeCase{3, 3, 4, 3, 6, 8, "bilinear"},
                                           ResizeCase{3, 5, 4, 3, 3, 7, "bilinear"},
                                           ResizeCase{3, 5, 4, 3, 3, 7, "nearest"}));
