// global_avg_pool on the cpu backend's own loops where the map's channels lie in runs of 16 to 64
// (plugins/onednn/channel_mean.hpp): channel-blocked float32 maps with and without padding lanes, channels-last
// inputs, and bf16. Each channel's mean against the definition computed here from the tapped input, in both
// precisions; the gradient it spreads back against finite differences; and the same bits on one thread or two.
#include "ramjet/plugin/example.hpp"
#include "onednn_harness.hpp"
#include "onednn_models.hpp"
#include "gradient_check.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

using namespace ramjet::core;
using namespace ramjet::test::cpu_backend;

namespace {

// x [5, 5, 3] → 1x1 convolution without bias (C filters) → global_avg_pool → dense. The convolution lays its output
// out blocked by 16 channels in float32 (4 and 20 channels: padding lanes) and channels-last in bf16 on AMX.
json after_conv(int64_t channels) {
  Ir ir;
  ir.input("x", {5, 5, 3})
      .conv("conv", "x", 3, {5, 5, channels}, {{"filters", channels}, {"kernel", {1, 1}}, {"use_bias", false}})
      .node("pool", "global_avg_pool", {"conv"}, {channels});
  return ir.dense("out", "pool", channels, 3).classifier("out");
}

// x [side, side, C] pooled as the host gave it: channels-last, read in runs of 16 to 64.
json on_the_input(int64_t side, int64_t channels) {
  Ir ir;
  ir.input("x", {side, side, channels}).node("pool", "global_avg_pool", {"x"}, {channels});
  return ir.dense("out", "pool", channels, 3).classifier("out");
}

struct Step {
  std::vector<float> logits;
  std::map<std::string, std::vector<float>> tapped, gradients;
};

// One training step of batch 8 with taps on `taps` (empty: none).
Step train_step(const json& graph, const Shape& input, const char* precision, const json& taps, int threads = 1) {
  Step s;
  Harness h(json{{"threads", threads}});
  const Status compiled = h.compile(graph, {{"batch", 8}, {"precision", precision}, {"optimizer", {{"type", "sgd"}}}});
  EXPECT_TRUE(compiled.ok()) << compiled.message;
  Example params = random_params(graph, 5, 1.0f);
  EXPECT_TRUE(h.set_state("parameters", params).ok());
  TapLog log;
  if (!taps.empty()) {
    EXPECT_TRUE(h.set_taps(taps, &record_tap, &log).ok());
  }
  Example batch = batch_of(input, 8, 3, 41), out;
  EXPECT_TRUE(h.forward(batch, out, true).ok());
  EXPECT_TRUE(h.backward().ok());
  s.logits = values(out, "out");
  s.tapped = log.seen;
  Example grads = h.state("gradients");
  for (const char* name : {"conv/kernel", "bn/gamma", "bn/beta", "out/kernel", "out/bias"})
    if (grads.find(name)) s.gradients[name] = values(grads, name);
  return s;
}

// Whether `precision` compiles here (mixed_bfloat16 needs AVX-512).
bool runs_here(const char* precision) {
  Harness h;
  return h.compile(after_conv(16), {{"batch", 8}, {"precision", precision}, {"optimizer", {{"type", "sgd"}}}}).ok();
}

// The pool's output against the mean of its tapped input over the positions, in double. In bf16 the mean is
// rounded to 8 significant bits, and a float32 input was rounded so before it was summed (each by at most 2^-9 of
// itself): together at most 2^-8 of the mean of the values' magnitudes. Float32 sums 25 to 36 values in order.
void expect_channel_means(const json& graph, const Shape& input, const std::string& pooled_value, int64_t channels,
                          const char* precision) {
  const Step s = train_step(graph, input, precision, json::array({pooled_value, "pool"}));
  const std::vector<float>& x = s.tapped.at(pooled_value);
  const std::vector<float>& pool = s.tapped.at("pool");
  ASSERT_EQ(pool.size(), static_cast<size_t>(8 * channels));
  const int64_t positions = static_cast<int64_t>(x.size()) / (8 * channels);
  const bool bf16 = std::string(precision) == "mixed_bfloat16";
  for (int64_t n = 0; n < 8; ++n)
    for (int64_t c = 0; c < channels; ++c) {
      double sum = 0, magnitude = 0;
      for (int64_t p = 0; p < positions; ++p) {
        sum += x[(n * positions + p) * channels + c];
        magnitude += std::abs(x[(n * positions + p) * channels + c]);
      }
      const double want = sum / static_cast<double>(positions), size = magnitude / static_cast<double>(positions);
      const double tolerance = bf16 ? size * std::ldexp(1.0, -8) : 1e-6 * std::max(1.0, size);
      EXPECT_NEAR(pool[n * channels + c], want, tolerance) << "example " << n << ", channel " << c;
    }
}

}  // namespace

TEST(OnednnPooling, AGlobalAverageIsEachChannelsMeanOverItsPositions) {
  for (const char* precision : {"float32", "mixed_bfloat16"}) {
    if (!runs_here(precision)) continue;  // mixed_bfloat16 without AVX-512: float32 alone is checked
    for (int64_t channels : {4, 20, 32, 64}) {
      SCOPED_TRACE(std::string(precision) + ", after a convolution, " + std::to_string(channels) + " channels");
      expect_channel_means(after_conv(channels), {5, 5, 3}, "conv", channels, precision);
    }
    for (int64_t channels : {16, 48, 64}) {
      SCOPED_TRACE(std::string(precision) + ", on the input, " + std::to_string(channels) + " channels");
      expect_channel_means(on_the_input(6, channels), {6, 6, channels}, "x", channels, precision);
    }
  }
}

TEST(OnednnPooling, AGlobalAveragesGradientMatchesFiniteDifferences) {
  for (int64_t channels : {4, 20, 64}) {
    SCOPED_TRACE(std::to_string(channels) + " channels");
    expect_gradients_match(after_conv(channels), batch_of({5, 5, 3}, 6, 3, 43), 6);
  }
}

// Items of (example, channel group) are handed to whichever thread is free, each summed on one: a map large enough
// for two threads (8 x 256 x 64 values) gives the same bits on one, forward and backward (the batch norm before the
// pool learns from the gradient it spreads; its own passes give the same bits on any number of threads).
TEST(OnednnPooling, AGlobalAverageGivesTheSameBitsOnTwoThreads) {
  for (const char* precision : {"float32", "mixed_bfloat16"}) {
    if (!runs_here(precision)) continue;
    SCOPED_TRACE(precision);
    Ir ir;
    ir.input("x", {16, 16, 64}).batch_norm("bn", "x", {16, 16, 64}).node("pool", "global_avg_pool", {"bn"}, {64});
    const json graph = ir.dense("out", "pool", 64, 3).classifier("out");
    const Step one = train_step(graph, {16, 16, 64}, precision, json::array({"pool"}), 1);
    const Step two = train_step(graph, {16, 16, 64}, precision, json::array({"pool"}), 2);
    EXPECT_EQ(one.tapped.at("pool"), two.tapped.at("pool"));
    for (const char* name : {"bn/gamma", "bn/beta"}) EXPECT_EQ(one.gradients.at(name), two.gradients.at(name)) << name;
  }
}
