// batch_norm on the cpu backend's own kernels (plugins/onednn/norm_clip.hpp), in float32 and bf16, alone or with the
// relu or relu6 that reads it fused in. Its gradients against finite differences; its forward, and the moving
// statistics a training step leaves, against the definition computed here from the tapped input, in both
// precisions and over the layouts the kernels read (channel-blocked, and channels-last runs of 8 to 64 channels);
// the fused pair against the two layers apart; and the same bits on one thread or two. (That a whole MobileNet
// leaves no relu6 to run on its own: onednn_kernels_test.cpp.)
#include "ramjet/plugin/example.hpp"
#include "onednn_harness.hpp"
#include "onednn_models.hpp"
#include "gradient_check.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

using namespace ramjet::core;
using namespace ramjet::test::cpu_backend;

namespace {

const char* const kActivations[] = {"", "relu", "relu6"};  // "": the batch norm alone

// Adds the activation (if any) after "bn" and returns the name of the value the batch-norm layer makes.
std::string after_norm(Ir& ir, const std::string& activation, const Shape& shape) {
  if (activation.empty()) return "bn";
  ir.node("act", "activation", {"bn"}, shape, {{"activation", activation}});
  return "act";
}

// x [4, 4, 2] → conv without bias → batch_norm → activation → global average pool → dense. In float32 the
// convolution lays channels out blocked by 16 (4 channels: 12 padding lanes); in bf16 on AMX, channels-last, which
// the kernels read in runs of up to 64 channels.
json image_block(int64_t channels, const std::string& activation) {
  Ir ir;
  ir.input("x", {4, 4, 2})
      .conv("conv", "x", 2, {4, 4, channels},
            {{"filters", channels}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}, {"use_bias", false}})
      .batch_norm("bn", "conv", {4, 4, channels});
  const std::string out = after_norm(ir, activation, {4, 4, channels});
  return ir.node("pool", "global_avg_pool", {out}, {channels}).dense("out", "pool", channels, 3).classifier("out");
}

// x [6] → dense without bias → batch_norm → activation → dense. Five features are copied into a layout blocked
// by 16; sixteen are read in place in runs of 16, twenty-four in runs of 8.
json vector_block(int64_t features, const std::string& activation) {
  Ir ir;
  ir.input("x", {6}).dense("d1", "x", 6, features, "linear", false).batch_norm("bn", "d1", {features});
  const std::string out = after_norm(ir, activation, {features});
  return ir.dense("out", out, features, 3).classifier("out");
}

struct Case {
  std::string what;
  json graph;
  Shape input;
  std::string norm_input;  // the value the batch norm reads
  int64_t channels;
};

std::vector<Case> cases(const std::string& activation, const std::vector<int64_t>& image_channels = {4, 32}) {
  std::vector<Case> c;
  for (int64_t ch : image_channels)
    c.push_back({"image, " + std::to_string(ch) + " channels", image_block(ch, activation), {4, 4, 2}, "conv", ch});
  for (int64_t f : {5, 16, 24})
    c.push_back({"vector, " + std::to_string(f) + " features", vector_block(f, activation), {6}, "d1", f});
  return c;
}

// Parameters up to 3 and gammas up to 6, so that the normalised values cross both 0 and 6; moving variances
// positive, as training keeps them.
Example params_for(const json& graph, uint32_t seed) {
  Example params = random_params(graph, seed, 3.0f);
  std::vector<float> gamma = values(params, "bn/gamma");
  for (float& g : gamma) g *= 2.0f;
  put(params, "bn/gamma", {static_cast<int64_t>(gamma.size())}, gamma);
  for (const char* part : {"bn/moving_mean", "bn/moving_variance"}) {
    std::vector<float> v = values(params, part);
    for (float& x : v) x = std::fabs(x) + (part == std::string("bn/moving_variance") ? 0.5f : 0.0f);
    put(params, part, {static_cast<int64_t>(v.size())}, v);
  }
  return params;
}

float clip(float v, const std::string& activation) {
  if (activation == "relu") return std::max(v, 0.0f);
  if (activation == "relu6") return std::min(std::max(v, 0.0f), 6.0f);
  return v;
}

// The definition, in double: per channel (the last axis of `x`, values laid out [..., C]), the batch's mean and
// biased variance; the clipped normalisation of every value.
struct Reference {
  std::vector<double> mean, variance;
  std::vector<float> y;
};
Reference reference(const std::vector<float>& x, int64_t C, const std::vector<float>& gamma,
                    const std::vector<float>& beta, const std::string& activation, double epsilon = 1e-3) {
  Reference r{std::vector<double>(C, 0.0), std::vector<double>(C, 0.0), std::vector<float>(x.size())};
  const double count = static_cast<double>(x.size() / C);
  for (size_t i = 0; i < x.size(); ++i) r.mean[i % C] += x[i] / count;
  for (size_t i = 0; i < x.size(); ++i) r.variance[i % C] += (x[i] - r.mean[i % C]) * (x[i] - r.mean[i % C]) / count;
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t c = i % C;
    const double z = (x[i] - r.mean[c]) / std::sqrt(r.variance[c] + epsilon) * gamma[c] + beta[c];
    r.y[i] = clip(static_cast<float>(z), activation);
  }
  return r;
}

// Whether `precision` compiles here (mixed_bfloat16 needs AVX-512); the reason when it does not.
std::string refused(const json& graph, const char* precision) {
  Harness h;
  const Status s = h.compile(graph, {{"batch", 8}, {"precision", precision}, {"optimizer", {{"type", "sgd"}}}});
  if (s.ok()) return "";
  EXPECT_NE(s.message.find("needs a CPU with AVX-512"), std::string::npos) << s.message;
  return s.message;
}

// Everything one training step and one inference forward produce.
struct StepResults {
  std::vector<float> train_logits, loss, inference_logits;
  std::map<std::string, std::vector<float>> gradients, parameters, tapped;
};

StepResults one_step(const Case& c, const char* precision, const json& taps, int threads = 1) {
  StepResults r;
  Harness h(json{{"threads", threads}});
  const Status compiled =
      h.compile(c.graph, {{"batch", 8}, {"precision", precision}, {"optimizer", {{"type", "sgd"}}}});
  EXPECT_TRUE(compiled.ok()) << compiled.message;
  Example params = params_for(c.graph, 31);
  EXPECT_TRUE(h.set_state("parameters", params).ok());
  TapLog log;
  if (!taps.empty()) {
    EXPECT_TRUE(h.set_taps(taps, &record_tap, &log).ok());
  }
  Example batch = batch_of(c.input, 8, 3, 32), out, inferred;
  EXPECT_TRUE(h.forward(batch, out, true).ok());
  EXPECT_TRUE(h.backward().ok());
  r.tapped = log.seen;
  r.train_logits = values(out, "out");
  r.loss = {scalar(out, "loss")};
  Example grads = h.state("gradients");
  for (const char* name : {"conv/kernel", "d1/kernel", "bn/gamma", "bn/beta", "out/kernel", "out/bias"})
    if (grads.find(name)) r.gradients[name] = values(grads, name);
  EXPECT_TRUE(h.forward(batch, inferred, false).ok());  // with the moving statistics the step moved
  r.inference_logits = values(inferred, "out");
  Example state = h.state("parameters");
  for (const char* name : {"bn/moving_mean", "bn/moving_variance", "bn/gamma", "bn/beta"})
    r.parameters[name] = values(state, name);
  return r;
}

// The forward against the definition, from the batch norm's input as the forward saw it (a tap: bf16 values come
// out widened exactly), and the moving statistics one step moved toward the batch's (by 1 - momentum, the test
// graphs' 0.9). bf16 rounds the output to 8 significant bits.
void expect_the_definition(const char* precision) {
  const double tolerance = precision == std::string("mixed_bfloat16") ? 1e-2 : 2e-5;
  for (const char* activation : kActivations)
    for (const Case& c : cases(activation, {4, 8, 32, 48, 64})) {
      SCOPED_TRACE(c.what + ", " + precision + ", activation '" + activation + "'");
      const std::string made = std::string(activation).empty() ? "bn" : "act";
      const StepResults r = one_step(c, precision, json::array({c.norm_input, made}));
      const std::vector<float>& x = r.tapped.at(c.norm_input);
      const std::vector<float>& y = r.tapped.at(made);
      Example p = params_for(c.graph, 31);
      const Reference want = reference(x, c.channels, values(p, "bn/gamma"), values(p, "bn/beta"), activation);
      ASSERT_EQ(y.size(), want.y.size());
      int far = 0;
      for (size_t i = 0; i < y.size(); ++i)
        if (std::fabs(y[i] - want.y[i]) > tolerance * std::max(1.0f, std::fabs(want.y[i]))) ++far;
      EXPECT_EQ(far, 0) << "of " << y.size() << " values";
      const std::vector<float> mm0 = values(p, "bn/moving_mean"), mv0 = values(p, "bn/moving_variance");
      for (int64_t ch = 0; ch < c.channels; ++ch) {
        EXPECT_NEAR(r.parameters.at("bn/moving_mean")[ch], 0.9 * mm0[ch] + 0.1 * want.mean[ch], 1e-5) << ch;
        EXPECT_NEAR(r.parameters.at("bn/moving_variance")[ch], 0.9 * mv0[ch] + 0.1 * want.variance[ch],
                    1e-5 * std::max(1.0, want.variance[ch]))
            << ch;
      }
    }
}

// Work is split by channel group and example, and sums over examples are added in example order: a layer large
// enough to run on two threads gives the same bits on one, over runs of 16 to 64 channels.
void expect_the_same_bits_on_two_threads(const char* precision) {
  for (int64_t channels : {32, 48, 64}) {
    SCOPED_TRACE(std::string(precision) + ", " + std::to_string(channels) + " channels");
    Ir ir;
    ir.input("x", {16, 16, channels}).batch_norm("bn", "x", {16, 16, channels});
    const json g = ir.node("act", "activation", {"bn"}, {16, 16, channels}, {{"activation", "relu"}})
                       .node("pool", "global_avg_pool", {"act"}, {channels})
                       .dense("out", "pool", channels, 3)
                       .classifier("out");
    const Case c{"", g, {16, 16, channels}, "x", channels};  // 8 x 16 x 16 x 32 values and more: a team's work
    const StepResults one = one_step(c, precision, json::array(), 1), two = one_step(c, precision, json::array(), 2);
    // The batch norm's own results (oneDNN's bf16 dense may sum its bias gradient in another order on two).
    EXPECT_EQ(one.train_logits, two.train_logits);
    EXPECT_EQ(one.inference_logits, two.inference_logits);
    for (const char* name : {"bn/gamma", "bn/beta"}) EXPECT_EQ(one.gradients.at(name), two.gradients.at(name)) << name;
    for (const auto& [name, v] : one.parameters) EXPECT_EQ(v, two.parameters.at(name)) << name;
  }
}

#define SKIP_WITHOUT_BF16()                                    \
  if (!refused(image_block(32, ""), "mixed_bfloat16").empty()) \
  GTEST_SKIP() << "this CPU cannot run mixed_bfloat16"

}  // namespace

TEST(OnednnBatchNorm, GradientsMatchFiniteDifferences) {
  GradCheck check;
  check.param_scale = 2.0f;  // at 2.5, 21-25 of a kernel's 48 checked entries stepped across the clip's kinks
  check.eps = 7e-3;  // as for batch_norm alone (backend_conformance_test.cpp): the batch mean cancels the rest
  for (const char* activation : kActivations)
    for (const Case& c : cases(activation)) {
      SCOPED_TRACE(c.what + ", activation '" + activation + "'");
      expect_gradients_match(c.graph, batch_of(c.input, 6, 3, 33), 6, check);
    }
}

TEST(OnednnBatchNorm, TheForwardAndTheMovingStatisticsMatchTheDefinition) { expect_the_definition("float32"); }

TEST(OnednnBatchNorm, Bf16TheForwardAndTheMovingStatisticsMatchTheDefinition) {
  SKIP_WITHOUT_BF16();
  expect_the_definition("mixed_bfloat16");
}

TEST(OnednnBatchNorm, TwoThreadsGiveTheBitsOfOne) { expect_the_same_bits_on_two_threads("float32"); }

TEST(OnednnBatchNorm, Bf16TwoThreadsGiveTheBitsOfOne) {
  SKIP_WITHOUT_BF16();
  expect_the_same_bits_on_two_threads("mixed_bfloat16");
}

// The fused pair against the batch norm and the activation apart (a tap on the batch norm keeps its value, so the
// activation runs as its own oneDNN primitive): the same step to float32's rounding.
TEST(OnednnBatchNorm, TheFusedActivationAgreesWithTheActivationApart) {
  for (const char* activation : {"relu", "relu6"})
    for (const Case& c : cases(activation)) {
      SCOPED_TRACE(c.what + ", activation " + activation);
      const StepResults fused = one_step(c, "float32", json::array()),
                        apart = one_step(c, "float32", json::array({"bn"}));
      // The tapped run kept the batch norm's output; its values crossed the clip's bounds.
      const std::vector<float>& bn = apart.tapped.at("bn");
      EXPECT_LT(*std::min_element(bn.begin(), bn.end()), 0.0f);
      if (activation == std::string("relu6")) {
        EXPECT_GT(*std::max_element(bn.begin(), bn.end()), 6.0f);
      }
      EXPECT_LT(distance(fused.train_logits, apart.train_logits), 1e-5);
      EXPECT_LT(distance(fused.loss, apart.loss), 1e-6);
      EXPECT_LT(distance(fused.inference_logits, apart.inference_logits), 1e-5);
      ASSERT_EQ(fused.gradients.size(), apart.gradients.size());
      for (const auto& [name, g] : fused.gradients) EXPECT_LT(distance(g, apart.gradients.at(name)), 1e-4) << name;
      for (const auto& [name, p] : fused.parameters) EXPECT_LT(distance(p, apart.parameters.at(name)), 1e-6) << name;
    }
}

// bf16 values, float32 statistics: a step under mixed_bfloat16 lands where float32's does, to bf16's rounding, over
// channel-blocked and channels-last layouts alike. The gradients' distances (up to 0.071 here, with parameters up
// to 3 and gammas up to 6) are those oneDNN's batch-norm primitive gave on these graphs, to two digits: the
// convolution's and the dense layers' bf16 rounding, not the batch norm's.
TEST(OnednnBatchNorm, Bf16StepsFollowFloat32) {
  SKIP_WITHOUT_BF16();
  for (const char* activation : kActivations)
    for (const Case& c : cases(activation, {32, 64})) {
      SCOPED_TRACE(c.what + ", activation '" + activation + "'");
      const StepResults f32 = one_step(c, "float32", json::array());
      const StepResults bf16 = one_step(c, "mixed_bfloat16", json::array());
      EXPECT_LT(distance(bf16.train_logits, f32.train_logits), 3e-2);
      EXPECT_LT(distance(bf16.inference_logits, f32.inference_logits), 3e-2);
      for (const auto& [name, g] : f32.gradients) EXPECT_LT(distance(bf16.gradients.at(name), g), 0.1) << name;
    }
}

// The graph's input normalised, values near 50 that spread by 0.05: the layer has no input gradient to write, and
// a mean far from the spread still normalises to the definition's values. (Within what float32 holds of such
// values: one step of 50 is about 1e-4 of their spread.)
TEST(OnednnBatchNorm, AnInputFarFromZeroNormalisesAsTheDefinitionSays) {
  const json g = Ir()
                     .input("x", {6})
                     .batch_norm("bn", "x", {6})
                     .node("act", "activation", {"bn"}, {6}, {{"activation", "relu6"}})
                     .dense("out", "act", 6, 3)
                     .classifier("out");
  Example batch = batch_of({6}, 8, 3, 34);
  std::vector<float> x = values(batch, "x");
  for (float& v : x) v = 50.0f + 0.05f * v;
  put(batch, "x", {8, 6}, x);
  Harness h;
  ASSERT_TRUE(h.compile(g, {{"batch", 8}, {"precision", "float32"}, {"optimizer", {{"type", "sgd"}}}}).ok());
  Example params = params_for(g, 35);
  ASSERT_TRUE(h.set_state("parameters", params).ok());
  TapLog log;
  ASSERT_TRUE(h.set_taps(json::array({"act"}), &record_tap, &log).ok());
  Example out;
  ASSERT_TRUE(h.forward(batch, out, true).ok());
  ASSERT_TRUE(h.backward().ok());
  const Reference want = reference(x, 6, values(params, "bn/gamma"), values(params, "bn/beta"), "relu6");
  const std::vector<float>& y = log.seen.at("act");
  ASSERT_EQ(y.size(), want.y.size());
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], want.y[i], 3e-3) << i;
  Example grads = h.state("gradients");
  for (const char* name : {"bn/gamma", "bn/beta"})
    for (float v : values(grads, name)) EXPECT_TRUE(std::isfinite(v)) << name;
}
