// The oneDNN "cpu" backend's int8 inference (compile with precision "int8", docs/quantized-graph.md) through the
// C ABI: small quantized graphs built here, with float weights quantized by the contract's rules, against an int8
// reference written with TFLite's integer arithmetic (int32 accumulation, fixed-point requantization, zero points,
// activation clamps). Also: batch-size changes, parameter errors, and the training calls it refuses.
#include "ramjet/plugin/components.hpp"
#include "ramjet/plugin/example.hpp"
#include "ramjet/plugin/host_api.hpp"
#include "ramjet/plugin/tensor.hpp"
#include "onednn_harness.hpp"
#include "test_support.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <random>

using namespace ramjet::core;
using namespace ramjet::test::cpu_backend;

namespace {

constexpr DLDataType kI8{kDLInt, 8, 1};

// ---- TFLite's integer arithmetic, written out for the reference --------------------------------------------

struct Multiplier {
  int32_t m = 0;
  int shift = 0;
};

Multiplier quantize_multiplier(double real) {
  if (real == 0) return {};
  int shift = 0;
  const double q = std::frexp(real, &shift);
  auto fixed = static_cast<int64_t>(std::round(q * (1LL << 31)));
  if (fixed == (1LL << 31)) fixed /= 2, ++shift;
  return {static_cast<int32_t>(fixed), shift};
}

int32_t high_mul(int32_t a, int32_t b) {
  if (a == b && a == std::numeric_limits<int32_t>::min()) return std::numeric_limits<int32_t>::max();
  const int64_t ab = int64_t{a} * b;
  const int32_t nudge = ab >= 0 ? (1 << 30) : (1 - (1 << 30));
  return static_cast<int32_t>((ab + nudge) / (1LL << 31));
}

int32_t divide_by_pot(int32_t x, int e) {
  const int32_t mask = static_cast<int32_t>((1LL << e) - 1), rem = x & mask;
  return (x >> e) + (rem > (mask >> 1) + (x < 0 ? 1 : 0) ? 1 : 0);
}

int32_t requantize(int32_t x, const Multiplier& m) {
  const int left = m.shift > 0 ? m.shift : 0, right = m.shift > 0 ? 0 : -m.shift;
  return divide_by_pot(high_mul(x * (1 << left), m.m), right);
}

// ---- quantized models built alongside their reference ------------------------------------------------------

struct QTensor {
  Shape shape;             // per example
  std::vector<int32_t> q;  // int8 values, batch first, NHWC
  float scale = 1;
  int32_t zp = 0;
};

// The contract's activation parameters for a range (widened to include 0).
void choose_quant(float lo, float hi, QTensor& t) {
  lo = std::min(lo, 0.0f), hi = std::max(hi, 0.0f);
  if (hi - lo < 1e-6f) hi = lo + 1e-6f;
  t.scale = (hi - lo) / 255.0f;
  t.zp = static_cast<int32_t>(std::clamp<double>(std::round(-128.0 - lo / t.scale), -128, 127));
}

std::pair<int32_t, int32_t> clamp_for(const std::string& activation, const QTensor& out) {
  if (activation == "relu") return {std::max(-128, out.zp), 127};
  if (activation == "relu6")
    return {std::max(-128, out.zp), std::min<int32_t>(127, out.zp + static_cast<int32_t>(std::round(6.0f / out.scale)))};
  return {-128, 127};
}

class QModel {
 public:
  QModel(int64_t batch, uint32_t seed) : batch_(batch), rng_(seed) {}

  // A float input in [0, 1], quantized like an image (scale 1/255, zero point -128).
  void input(const std::string& name, const Shape& shape) {
    graph_["inputs"].push_back({{"name", name}, {"shape", shape}, {"dtype", "float32"}});
    QTensor t;
    t.shape = shape;
    t.scale = 1.0f / 255.0f;
    t.zp = -128;
    std::uniform_real_distribution<float> d(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(batch_ * count_of(shape)));
    for (float& v : x) v = d(rng_);
    for (float v : x) t.q.push_back(std::clamp<int32_t>(static_cast<int32_t>(std::round(v / t.scale)) + t.zp, -128, 127));
    input_floats_[name] = std::move(x);
    activation_entry(name, t);
    values_[name] = std::move(t);
  }

  // conv2d, HWIO kernel with per-channel scales (axis 3); padding [top, bottom, left, right].
  void conv(const std::string& name, const std::string& in_name, int64_t filters, int64_t k, int64_t stride,
            const std::vector<int64_t>& pad, int64_t groups, const std::string& activation) {
    const QTensor& in = values_.at(in_name);
    const int64_t H = in.shape[0], W = in.shape[1], C = in.shape[2], Cg = C / groups, Fg = filters / groups;
    const int64_t OH = (H + pad[0] + pad[1] - k) / stride + 1, OW = (W + pad[2] + pad[3] - k) / stride + 1;
    const Shape kshape{k, k, Cg, filters};
    const auto [wq, wscale] = quantize_weights(kshape, filters, 3);
    const std::vector<int32_t> bias = quantize_bias(in.scale, wscale, filters);
    std::vector<int32_t> acc(static_cast<size_t>(batch_ * OH * OW * filters));
    for (int64_t n = 0; n < batch_; ++n)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox)
          for (int64_t f = 0; f < filters; ++f) {
            const int64_t g = f / Fg;
            int32_t a = bias[f];
            for (int64_t ky = 0; ky < k; ++ky)
              for (int64_t kx = 0; kx < k; ++kx) {
                const int64_t y = oy * stride - pad[0] + ky, x = ox * stride - pad[2] + kx;
                if (y < 0 || y >= H || x < 0 || x >= W) continue;  // padding contributes nothing (it is the zero point)
                for (int64_t ci = 0; ci < Cg; ++ci)
                  a += (in.q[((n * H + y) * W + x) * C + g * Cg + ci] - in.zp) * wq[((ky * k + kx) * Cg + ci) * filters + f];
              }
            acc[((n * OH + oy) * OW + ox) * filters + f] = a;
          }
    json attrs = {{"filters", filters}, {"kernel", {k, k}}, {"strides", {stride, stride}}, {"padding", pad},
                  {"groups", groups}, {"activation", activation}, {"use_bias", true}};
    finish_weighted(name, "conv2d", in_name, {OH, OW, filters}, attrs, kshape, wq, wscale, bias, acc, activation, 3);
  }

  // dense, [in, out] kernel with one scale.
  void dense(const std::string& name, const std::string& in_name, int64_t units, const std::string& activation) {
    const QTensor& in = values_.at(in_name);
    const int64_t K = in.shape[0];
    const Shape kshape{K, units};
    const auto [wq, wscale] = quantize_weights(kshape, 1, -1);
    const std::vector<int32_t> bias = quantize_bias(in.scale, std::vector<float>(units, wscale[0]), units);
    std::vector<int32_t> acc(static_cast<size_t>(batch_ * units));
    for (int64_t n = 0; n < batch_; ++n)
      for (int64_t o = 0; o < units; ++o) {
        int32_t a = bias[o];
        for (int64_t i = 0; i < K; ++i) a += (in.q[n * K + i] - in.zp) * wq[i * units + o];
        acc[n * units + o] = a;
      }
    json attrs = {{"units", units}, {"activation", activation}, {"use_bias", true}};
    finish_weighted(name, "dense", in_name, {units}, attrs, kshape, wq, wscale, bias, acc, activation, -1);
  }

  void max_pool(const std::string& name, const std::string& in_name, int64_t k) {
    const QTensor& in = values_.at(in_name);
    const int64_t H = in.shape[0], W = in.shape[1], C = in.shape[2], OH = H / k, OW = W / k;
    QTensor out = in;
    out.shape = {OH, OW, C};
    out.q.assign(static_cast<size_t>(batch_ * OH * OW * C), -128);
    for (int64_t n = 0; n < batch_; ++n)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox)
          for (int64_t c = 0; c < C; ++c) {
            int32_t& m = out.q[((n * OH + oy) * OW + ox) * C + c];
            for (int64_t y = oy * k; y < oy * k + k; ++y)
              for (int64_t x = ox * k; x < ox * k + k; ++x) m = std::max(m, in.q[((n * H + y) * W + x) * C + c]);
          }
    node(name, "max_pool", {in_name}, out.shape, {{"pool", {k, k}}, {"strides", {k, k}}});
    activation_entry(name, out);
    values_[name] = std::move(out);
  }

  // TFLite's AveragePool: a sum of int8 values, divided rounding half away from zero; padding not counted.
  void avg_pool(const std::string& name, const std::string& in_name, int64_t k, int64_t stride, int64_t pad) {
    const QTensor& in = values_.at(in_name);
    const int64_t H = in.shape[0], W = in.shape[1], C = in.shape[2];
    const int64_t OH = (H + 2 * pad - k) / stride + 1, OW = (W + 2 * pad - k) / stride + 1;
    QTensor out = in;
    out.shape = {OH, OW, C};
    out.q.clear();
    for (int64_t n = 0; n < batch_; ++n)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox)
          for (int64_t c = 0; c < C; ++c) {
            int32_t sum = 0, count = 0;
            for (int64_t y = oy * stride - pad; y < oy * stride - pad + k; ++y)
              for (int64_t x = ox * stride - pad; x < ox * stride - pad + k; ++x)
                if (y >= 0 && y < H && x >= 0 && x < W) sum += in.q[((n * H + y) * W + x) * C + c], ++count;
            out.q.push_back(sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count);
          }
    node(name, "avg_pool", {in_name}, out.shape,
         {{"pool", {k, k}}, {"strides", {stride, stride}}, {"padding", {pad, pad, pad, pad}}});
    activation_entry(name, out);
    values_[name] = std::move(out);
  }

  // TFLite's Mean over H and W with the input's parameters kept.
  void global_avg_pool(const std::string& name, const std::string& in_name) {
    const QTensor& in = values_.at(in_name);
    const int64_t HW = in.shape[0] * in.shape[1], C = in.shape[2];
    QTensor out = in;
    out.shape = {C};
    out.q.clear();
    for (int64_t n = 0; n < batch_; ++n)
      for (int64_t c = 0; c < C; ++c) {
        int32_t sum = 0;
        for (int64_t i = 0; i < HW; ++i) sum += in.q[(n * HW + i) * C + c] - in.zp;
        const auto count = static_cast<int32_t>(HW);
        out.q.push_back(std::clamp((sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count) + in.zp, -128, 127));
      }
    node(name, "global_avg_pool", {in_name}, out.shape, json::object());
    activation_entry(name, out);
    values_[name] = std::move(out);
  }

  void flatten(const std::string& name, const std::string& in_name) {
    QTensor out = values_.at(in_name);
    out.shape = {count_of(out.shape)};
    node(name, "flatten", {in_name}, out.shape, json::object());
    activation_entry(name, out);
    values_[name] = std::move(out);
  }

  // TFLite's int8 ADD: left shift 20, both inputs rescaled to twice the larger scale, summed, rescaled.
  void add(const std::string& name, const std::string& a_name, const std::string& b_name, const std::string& activation) {
    const QTensor &a = values_.at(a_name), &b = values_.at(b_name);
    QTensor out;
    out.shape = a.shape;
    float lo = 0, hi = 0;
    for (size_t i = 0; i < a.q.size(); ++i) {
      float v = (a.q[i] - a.zp) * a.scale + (b.q[i] - b.zp) * b.scale;
      if (activation == "relu") v = std::max(v, 0.0f);
      lo = std::min(lo, v), hi = std::max(hi, v);
    }
    choose_quant(lo, hi, out);
    const double twice_max = 2.0 * std::max(a.scale, b.scale);
    const Multiplier ma = quantize_multiplier(a.scale / twice_max), mb = quantize_multiplier(b.scale / twice_max);
    const Multiplier mo = quantize_multiplier(twice_max / ((1 << 20) * static_cast<double>(out.scale)));
    const auto [qlo, qhi] = clamp_for(activation, out);
    for (size_t i = 0; i < a.q.size(); ++i) {
      const int32_t sum = requantize((a.q[i] - a.zp) * (1 << 20), ma) + requantize((b.q[i] - b.zp) * (1 << 20), mb);
      out.q.push_back(std::clamp(requantize(sum, mo) + out.zp, qlo, qhi));
    }
    node(name, "add", {a_name, b_name}, out.shape, {{"activation", activation}});
    activation_entry(name, out);
    values_[name] = std::move(out);
  }

  json qgraph(const std::string& output) const {
    json g = graph_;
    g["outputs"] = {output};
    g["quantization"] = {{"version", 1},
                         {"mode", "full_integer"},
                         {"input_type", "int8"},
                         {"output_type", "int8"},
                         {"calibration", {{"method", "minmax"}, {"batches", 1}}},
                         {"tensors", tensors_}};
    return g;
  }

  // The first `n` examples of the inputs, as float32 tensors.
  Example inputs(int64_t n) const {
    Example e;
    for (const auto& [name, x] : input_floats_) {
      Shape shape{n};
      const Shape& s = values_.at(name).shape;
      shape.insert(shape.end(), s.begin(), s.end());
      put(e, name, kF32, shape, std::vector<float>(x.begin(), x.begin() + n * count_of(s)));
    }
    return e;
  }

  Example params() const {
    Example e;
    for (const auto& [name, p] : kernels_) put(e, name, kI8, p.first, p.second);
    for (const auto& [name, p] : biases_) put(e, name, kI32, p.first, p.second);
    return e;
  }

  const QTensor& value(const std::string& name) const { return values_.at(name); }

 private:
  std::pair<std::vector<int8_t>, std::vector<float>> quantize_weights(const Shape& shape, int64_t channels, int axis) {
    std::uniform_real_distribution<float> d(-0.5f, 0.5f);
    std::vector<float> w(static_cast<size_t>(count_of(shape)));
    for (float& v : w) v = d(rng_);
    std::vector<float> peak(static_cast<size_t>(channels), 1e-8f);
    for (size_t i = 0; i < w.size(); ++i) {
      const size_t c = axis < 0 ? 0 : i % static_cast<size_t>(channels);
      peak[c] = std::max(peak[c], std::abs(w[i]));
    }
    std::vector<float> scale;
    for (float p : peak) scale.push_back(p / 127.0f);
    std::vector<int8_t> q;
    for (size_t i = 0; i < w.size(); ++i) {
      const size_t c = axis < 0 ? 0 : i % static_cast<size_t>(channels);
      q.push_back(static_cast<int8_t>(std::clamp<float>(std::round(w[i] / scale[c]), -127, 127)));
    }
    return {q, scale};
  }

  std::vector<int32_t> quantize_bias(float in_scale, const std::vector<float>& wscale, int64_t channels) {
    std::uniform_real_distribution<float> d(-0.3f, 0.3f);
    std::vector<int32_t> q;
    for (int64_t c = 0; c < channels; ++c) {
      const float s = in_scale * wscale[static_cast<size_t>(wscale.size() == 1 ? 0 : c)];
      q.push_back(static_cast<int32_t>(std::round(d(rng_) / s)));
    }
    return q;
  }

  // Calibrates the output from the accumulators (their real values), then requantizes them as TFLite does.
  void finish_weighted(const std::string& name, const std::string& op, const std::string& in_name, const Shape& shape,
                       json attrs, const Shape& kshape, const std::vector<int8_t>& wq, const std::vector<float>& wscale,
                       const std::vector<int32_t>& bias, const std::vector<int32_t>& acc, const std::string& activation,
                       int axis) {
    const QTensor& in = values_.at(in_name);
    const int64_t channels = shape.back();
    auto real = [&](size_t i) {
      const float v = acc[i] * in.scale * wscale[wscale.size() == 1 ? 0 : i % static_cast<size_t>(channels)];
      return activation == "relu" ? std::max(v, 0.0f) : activation == "relu6" ? std::clamp(v, 0.0f, 6.0f) : v;
    };
    float lo = 0, hi = 0;
    for (size_t i = 0; i < acc.size(); ++i) lo = std::min(lo, real(i)), hi = std::max(hi, real(i));
    QTensor out;
    out.shape = shape;
    choose_quant(lo, hi, out);
    const auto [qlo, qhi] = clamp_for(activation, out);
    for (size_t i = 0; i < acc.size(); ++i) {
      const float ws = wscale[wscale.size() == 1 ? 0 : i % static_cast<size_t>(channels)];
      const Multiplier m = quantize_multiplier(static_cast<double>(in.scale) * ws / out.scale);
      out.q.push_back(std::clamp(requantize(acc[i], m) + out.zp, qlo, qhi));
    }
    const std::string kname = name + "/kernel", bname = name + "/bias";
    graph_["params"][kname] = {{"shape", kshape}, {"dtype", "int8"}};
    graph_["params"][bname] = {{"shape", Shape{channels}}, {"dtype", "int32"}};
    node(name, op, {in_name}, shape, attrs, {{"kernel", kname}, {"bias", bname}});
    json kentry = {{"dtype", "int8"}, {"scale", wscale}, {"zero_point", std::vector<int>(wscale.size(), 0)}};
    if (axis >= 0) kentry["axis"] = axis;
    tensors_[kname] = kentry;
    std::vector<float> bscale;
    for (float s : wscale) bscale.push_back(in.scale * s);
    tensors_[bname] = {{"dtype", "int32"}, {"scale", bscale}, {"zero_point", std::vector<int>(bscale.size(), 0)}, {"axis", 0}};
    kernels_[kname] = {kshape, wq};
    biases_[bname] = {Shape{channels}, bias};
    activation_entry(name, out);
    values_[name] = std::move(out);
  }

  void node(const std::string& name, const std::string& op, const std::vector<std::string>& inputs, const Shape& shape,
            const json& attrs, const json& params = json::object()) {
    json n = {{"name", name}, {"op", op}, {"inputs", inputs}, {"shape", shape}, {"attrs", attrs}};
    if (!params.empty()) n["params"] = params;
    graph_["nodes"].push_back(n);
  }

  void activation_entry(const std::string& name, const QTensor& t) {
    tensors_[name] = {{"dtype", "int8"}, {"scale", {t.scale}}, {"zero_point", {t.zp}}};
  }

  int64_t batch_;
  std::mt19937 rng_;
  json graph_ = {{"inputs", json::array()}, {"nodes", json::array()}, {"params", json::object()}};
  json tensors_ = json::object();
  std::map<std::string, QTensor> values_;
  std::map<std::string, std::vector<float>> input_floats_;
  std::map<std::string, std::pair<Shape, std::vector<int8_t>>> kernels_;
  std::map<std::string, std::pair<Shape, std::vector<int32_t>>> biases_;
};

json int8_options(int64_t batch) { return {{"precision", "int8"}, {"batch", batch}, {"threads", 1}}; }

// The backend's float output against the reference's int8 values dequantized: within one quantization step
// everywhere (oneDNN rounds the same real multiplier in float where TFLite uses fixed point), and mostly exact.
void expect_matches(Harness& h, const QModel& m, const std::string& output, int64_t batch) {
  Example in = m.inputs(batch), out;
  const Status s = h.forward(in, out, false);
  ASSERT_TRUE(s.ok()) << s.message;
  const std::vector<float> got = values(out, output);
  const QTensor& ref = m.value(output);
  const size_t n = static_cast<size_t>(batch * count_of(ref.shape));
  ASSERT_EQ(got.size(), n);
  size_t exact = 0;
  std::vector<int32_t> distinct;
  for (size_t i = 0; i < n; ++i) {
    const float want = (ref.q[i] - ref.zp) * ref.scale;
    ASSERT_NEAR(got[i], want, ref.scale * 1.01f) << output << "[" << i << "]";
    exact += std::abs(got[i] - want) < ref.scale * 0.01f;
    if (std::find(distinct.begin(), distinct.end(), ref.q[i]) == distinct.end()) distinct.push_back(ref.q[i]);
  }
  EXPECT_GE(exact, n * 95 / 100) << "most values equal the reference exactly";
  EXPECT_GE(distinct.size(), 3u) << "the reference output is degenerate; the test would prove little";
}

void compile_and_load(Harness& h, const QModel& m, const std::string& output, int64_t batch) {
  const Status c = h.compile(m.qgraph(output), int8_options(batch));
  ASSERT_TRUE(c.ok()) << c.message;
  Example params = m.params();
  const Status s = h.set_state("parameters", params);
  ASSERT_TRUE(s.ok()) << s.message;
}

// A backend compiled for `output` at `batch` with the model's parameters, its forward against the reference.
void expect_backend_matches(const QModel& m, const std::string& output, int64_t batch) {
  Harness h;
  ASSERT_NO_FATAL_FAILURE(compile_and_load(h, m, output, batch));
  expect_matches(h, m, output, batch);
}

QModel int8_cnn(int64_t batch) {
  QModel m(batch, 11);
  m.input("image", {8, 8, 2});
  m.conv("conv", "image", 8, 3, 1, {0, 0, 0, 0}, 1, "relu");
  m.max_pool("pool", "conv", 2);
  m.flatten("flat", "pool");
  m.dense("logits", "flat", 5, "linear");
  return m;
}

// ---- tests ---------------------------------------------------------------------------------------------------

// The comparisons run, exactly, on every CPU: with VNNI on oneDNN's int8 kernels, without it on the plugin's own
// (plugins/onednn/int8/exact_conv.hpp), since oneDNN's AVX2 kernels saturate pairs of u8 x s8 products in 16 bits.
// Several models here hit that saturation, so they would fail on such a CPU if the plugin used oneDNN there.

TEST(OnednnInt8, ConvReluMaxPoolFlattenDenseMatchesTheIntegerReference) {
  const QModel m = int8_cnn(6);
  expect_backend_matches(m, "logits", 6);
}

TEST(OnednnInt8, ASmallerLastBatchGetsItsOwnPlanAndTheCompiledOneStillWorks) {
  const QModel m = int8_cnn(6);
  Harness h;
  compile_and_load(h, m, "logits", 6);
  expect_matches(h, m, "logits", 4);  // the first 4 examples of the reference
  expect_matches(h, m, "logits", 6);
}

// A linear 1x1 convolution leaves a zero point other than -128, so the depthwise convolution after it must
// subtract it, padding included (TFLite pads with the zero point); relu6 clamps; the global average is TFLite's
// Mean; the dense layer reads an input whose zero point is not -128 either.
TEST(OnednnInt8, DepthwiseConvWithAZeroPointInputAndPaddingMatchesTheIntegerReference) {
  QModel m(5, 23);
  m.input("image", {6, 6, 3});
  m.conv("mix", "image", 4, 1, 1, {0, 0, 0, 0}, 1, "linear");
  ASSERT_NE(m.value("mix").zp, -128) << "the test needs a non-trivial zero point";
  m.conv("depthwise", "mix", 4, 3, 1, {1, 1, 1, 1}, 4, "relu6");
  m.avg_pool("avg", "depthwise", 3, 2, 1);
  m.global_avg_pool("gap", "avg");
  m.dense("out", "gap", 3, "linear");
  expect_backend_matches(m, "depthwise", 5);
  expect_backend_matches(m, "out", 5);
}

// On a CPU with AVX-512 VNNI and VBMI, depthwise layers with kernels up to 4 rows high run on the plugin's own
// kernel (plugins/onednn/int8/depthwise_kernel.hpp): 16 channels a vector, so 20 channels make a full and a partial
// block; stride 2 with SAME-style padding on the bottom and right only, which the last row and column of outputs
// read; 10 columns make 5 output pixels, which the kernel sums side by side in one group; the input's zero point,
// which padding holds, is not -128.
TEST(OnednnInt8, StridedDepthwiseConvOverAPartialChannelBlockMatchesTheIntegerReference) {
  QModel m(3, 59);
  m.input("image", {10, 10, 3});
  m.conv("mix", "image", 20, 1, 1, {0, 0, 0, 0}, 1, "linear");
  ASSERT_NE(m.value("mix").zp, -128) << "the test needs a non-trivial zero point";
  m.conv("depthwise", "mix", 20, 3, 2, {0, 1, 0, 1}, 20, "relu6");
  expect_backend_matches(m, "depthwise", 3);
}

// A kernel size the depthwise kernel has no unrolled form for (2 x 2), on rows of 19 pixels: two groups of 8 and
// a rest of 3.
TEST(OnednnInt8, DepthwiseConvWithATwoByTwoKernelMatchesTheIntegerReference) {
  QModel m(2, 61);
  m.input("image", {19, 19, 2});
  m.conv("mix", "image", 16, 1, 1, {0, 0, 0, 0}, 1, "relu");
  m.conv("depthwise", "mix", 16, 2, 1, {0, 1, 0, 1}, 16, "linear");
  expect_backend_matches(m, "depthwise", 2);
}

// A dense layer whose input zero point is not -128 (a linear layer's output, flattened).
TEST(OnednnInt8, DenseOnALinearLayersOutputSubtractsItsZeroPoint) {
  QModel m(4, 17);
  m.input("image", {4, 4, 2});
  m.conv("mix", "image", 3, 1, 1, {0, 0, 0, 0}, 1, "linear");
  ASSERT_NE(m.value("mix").zp, -128) << "the test needs a non-trivial zero point";
  m.flatten("flat", "mix");
  m.dense("out", "flat", 6, "relu");
  expect_backend_matches(m, "out", 4);
}

TEST(OnednnInt8, StridedAvgPoolWithPaddingRoundsLikeTflite) {
  QModel m(3, 5);
  m.input("image", {7, 7, 4});
  m.conv("conv", "image", 6, 3, 1, {1, 1, 1, 1}, 1, "linear");
  m.avg_pool("avg", "conv", 3, 2, 1);
  expect_backend_matches(m, "avg", 3);
}

// More channels than the pools add at a time (64), so a chunk boundary falls inside the channels.
TEST(OnednnInt8, AvgPoolsOverMoreChannelsThanOneChunkRoundLikeTflite) {
  QModel m(3, 41);
  m.input("image", {6, 6, 2});
  m.conv("wide", "image", 70, 3, 1, {1, 1, 1, 1}, 1, "linear");
  m.avg_pool("avg", "wide", 3, 2, 1);
  m.global_avg_pool("gap", "avg");
  expect_backend_matches(m, "avg", 3);
  expect_backend_matches(m, "gap", 3);
}

// A global pool's mean comes from a table of every possible sum where the window has at most 4096 positions, and
// its sums are 16-bit where they cannot pass 65535 (at most 257 positions). Here 484 positions (a table, 32-bit
// sums) and 4356 (no table), both against TFLite's Mean.
TEST(OnednnInt8, GlobalAvgPoolsOverLargeWindowsRoundLikeTflite) {
  QModel m(2, 47);
  m.input("image", {66, 66, 2});
  m.conv("mix", "image", 5, 1, 1, {0, 0, 0, 0}, 1, "linear");
  m.global_avg_pool("whole", "mix");
  m.avg_pool("cells", "mix", 3, 3, 0);
  m.global_avg_pool("of_cells", "cells");
  expect_backend_matches(m, "whole", 2);
  expect_backend_matches(m, "of_cells", 2);
}

TEST(OnednnInt8, ResidualAddMatchesTfliteFixedPointExactly) {
  QModel m(4, 31);
  m.input("image", {5, 5, 2});
  m.conv("a", "image", 3, 3, 1, {1, 1, 1, 1}, 1, "linear");
  m.conv("b", "image", 3, 1, 1, {0, 0, 0, 0}, 1, "relu");
  m.add("sum", "a", "b", "relu");
  expect_backend_matches(m, "sum", 4);
}

// Few input values per kernel row take the backend's small-convolution kernel (AVX-512 VNNI CPUs): here with an
// input zero point other than -128 (a linear 1x1 convolution's output), SAME-style padding that must read that
// zero point, 20 filters (a partial block of 16 lanes) and a max pool fused over its output that drops the last
// row and column.
TEST(OnednnInt8, MaxPoolOfAWideConvolutionMatchesTheIntegerReference) {
  // 8 input channels make a kernel row too wide for the small-convolution kernel, so the pool is its own step (the
  // plugin's nhwc loop where the convolution writes nhwc); 7x7 pools to 3x3, leaving the last row and column out.
  QModel m(4, 17);
  m.input("image", {7, 7, 8});
  m.conv("conv", "image", 16, 3, 1, {1, 1, 1, 1}, 1, "relu");
  m.max_pool("pool", "conv", 2);
  m.flatten("flat", "pool");
  m.dense("logits", "flat", 5, "linear");
  expect_backend_matches(m, "logits", 4);
  expect_backend_matches(m, "pool", 4);
}

TEST(OnednnInt8, SmallConvWithAZeroPointPaddingAndAFusedPoolMatchesTheIntegerReference) {
  QModel m(3, 41);
  m.input("image", {9, 9, 2});
  m.conv("mix", "image", 3, 1, 1, {0, 0, 0, 0}, 1, "linear");
  ASSERT_NE(m.value("mix").zp, -128) << "the test needs a non-trivial zero point";
  m.conv("conv", "mix", 20, 3, 1, {1, 1, 1, 1}, 1, "relu");
  m.max_pool("pool", "conv", 2);
  expect_backend_matches(m, "pool", 3);
  expect_backend_matches(m, "conv", 3);  // the convolution's output is a graph output: nothing is fused
}

// Strides, relu6 and 40 filters (three blocks of lanes) on a one-channel image, the first layer's usual shape.
TEST(OnednnInt8, StridedSmallConvWithRelu6MatchesTheIntegerReference) {
  QModel m(4, 43);
  m.input("image", {11, 11, 1});
  m.conv("conv", "image", 40, 3, 2, {0, 1, 0, 1}, 1, "relu6");
  expect_backend_matches(m, "conv", 4);
}

// oneDNN's verbose switch, found in the copy of libdnnl the plugin loaded (the tests do not link oneDNN): its
// executions show each primitive's minibatch. Null when the library is not loaded.
using SetVerbose = int (*)(int);
SetVerbose onednn_set_verbose() {
  void* lib = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_NOLOAD);
  return lib ? reinterpret_cast<SetVerbose>(dlsym(lib, "dnnl_set_verbose")) : nullptr;
}

// A batch whose activations outgrow the cache runs as chunks of examples, each through the whole graph on one
// thread (plugins/onednn/int8/chunked_forward.hpp). The convolution's output takes 64 KiB an example, so chunks
// hold 8 examples at most: 20 examples make 3 chunks (7, 7, 6) on one thread and 4 (5 each) on two. Each
// example's outputs must be the bits the program gives it alone, and the TFLite reference's values.
TEST(OnednnInt8, ABatchRunInChunksGivesEachExampleTheBitsItGetsAlone) {
  QModel m(20, 53);
  m.input("image", {64, 64, 4});
  m.conv("conv", "image", 16, 3, 1, {1, 1, 1, 1}, 1, "relu");
  m.global_avg_pool("gap", "conv");
  m.dense("out", "gap", 3, "linear");
  for (const auto& [threads, chunk] : {std::pair{1, "mb7"}, std::pair{2, "mb5"}}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    Harness h;
    ASSERT_TRUE(h.compile(m.qgraph("out"), {{"precision", "int8"}, {"batch", 20}, {"threads", threads}}).ok());
    Example params = m.params();
    ASSERT_TRUE(h.set_state("parameters", params).ok());
    Example in = m.inputs(20), out;
    const SetVerbose set_verbose = onednn_set_verbose();
    ASSERT_NE(set_verbose, nullptr) << "the plugin's libdnnl.so.2 is not loaded";
    set_verbose(1);
    testing::internal::CaptureStdout();
    const Status s = h.forward(in, out, false);
    const std::string log = testing::internal::GetCapturedStdout();
    set_verbose(0);
    ASSERT_TRUE(s.ok()) << s.message;
    // The convolution is oneDNN's where the CPU has VNNI and oneDNN is not capped below it; elsewhere it runs on
    // the plugin's exact loops, which print nothing.
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512vnni") && std::getenv("ONEDNN_MAX_CPU_ISA") == nullptr) {
      EXPECT_NE(log.find("convolution"), std::string::npos) << "oneDNN ran no convolution:\n" << log;
    }
    if (log.find("convolution") != std::string::npos) {
      EXPECT_NE(log.find(chunk), std::string::npos) << "no convolution ran on a chunk (" << chunk << "):\n" << log;
    }
    EXPECT_EQ(log.find("mb20"), std::string::npos) << "a primitive ran on the whole batch:\n" << log;

    const std::vector<float> batch_out = values(out, "out");
    const std::vector<float> images = values(in, "image");
    const size_t per_image = 64 * 64 * 4;
    for (size_t i = 0; i < 20; ++i) {
      Example one, one_out;
      put(one, "image", kF32, {1, 64, 64, 4},
          std::vector<float>(images.begin() + i * per_image, images.begin() + (i + 1) * per_image));
      ASSERT_TRUE(h.forward(one, one_out, false).ok());
      const std::vector<float> alone = values(one_out, "out");
      ASSERT_EQ(alone.size(), 3u);
      for (size_t k = 0; k < 3; ++k) EXPECT_EQ(alone[k], batch_out[i * 3 + k]) << "example " << i << ", output " << k;
    }
    expect_matches(h, m, "out", 20);
  }
}

TEST(OnednnInt8, AParameterOfTheWrongDtypeIsAClearErrorNamingIt) {
  const QModel m = int8_cnn(2);
  Harness h;
  ASSERT_TRUE(h.compile(m.qgraph("logits"), int8_options(2)).ok());
  Example bad;
  put(bad, "conv/kernel", kF32, {3, 3, 2, 8}, std::vector<float>(3 * 3 * 2 * 8, 0.1f));
  const Status s = h.set_state("parameters", bad);
  EXPECT_EQ(s.code, RAMJET_ERR_INVALID_ARGUMENT);
  EXPECT_NE(s.message.find("'conv/kernel'"), std::string::npos) << s.message;
  EXPECT_NE(s.message.find("int8"), std::string::npos) << s.message;

  Example shaped;
  put(shaped, "conv/bias", kI32, {7}, std::vector<int32_t>(7, 0));
  const Status t = h.set_state("parameters", shaped);
  EXPECT_EQ(t.code, RAMJET_ERR_INVALID_ARGUMENT);
  EXPECT_NE(t.message.find("'conv/bias'"), std::string::npos) << t.message;
}

TEST(OnednnInt8, ForwardBeforeTheParametersAreSetSaysSo) {
  const QModel m = int8_cnn(2);
  Harness h;
  ASSERT_TRUE(h.compile(m.qgraph("logits"), int8_options(2)).ok());
  Example in = m.inputs(2), out;
  const Status s = h.forward(in, out, false);
  EXPECT_EQ(s.code, RAMJET_ERR_INVALID_ARGUMENT);
  EXPECT_NE(s.message.find("never set"), std::string::npos) << s.message;
}

TEST(OnednnInt8, TrainingCallsAreUnsupportedAndTheParametersComeBackAsSet) {
  const QModel m = int8_cnn(2);
  Harness h;
  compile_and_load(h, m, "logits", 2);
  const Status b = h.backward();
  EXPECT_EQ(b.code, RAMJET_ERR_UNSUPPORTED);
  EXPECT_NE(b.message.find("inference-only"), std::string::npos) << b.message;
  EXPECT_EQ(h.update(1, 0.01f).code, RAMJET_ERR_UNSUPPORTED);

  Example back;
  ASSERT_TRUE(h.get_state("parameters", back).ok());
  Example sent = m.params();
  ASSERT_EQ(back.entries.size(), sent.entries.size());
  for (const auto& e : sent.entries) {
    const DLTensor* t = back.find(e.name);
    ASSERT_NE(t, nullptr) << e.name;
    ASSERT_EQ(byte_size(*t), byte_size(e.tensor->dl_tensor)) << e.name;
    EXPECT_EQ(std::memcmp(first_byte(*t), first_byte(e.tensor->dl_tensor), byte_size(*t)), 0) << e.name;
  }
}

TEST(OnednnInt8, AGraphWithoutQuantizationIsRefusedClearly) {
  QModel m = int8_cnn(2);
  json g = m.qgraph("logits");
  g.erase("quantization");
  Harness h;
  const Status s = h.compile(g, int8_options(2));
  EXPECT_EQ(s.code, RAMJET_ERR_INVALID_ARGUMENT);
  EXPECT_NE(s.message.find("quantization"), std::string::npos) << s.message;
}


}  // namespace
