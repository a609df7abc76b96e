// A batch_norm read only by a relu6 runs, in float32, as one layer on the cpu backend's own kernels
// (plugins/onednn/norm_clip.hpp). Its gradients against finite differences; its results against oneDNN's batch
// norm and clip primitives, the path a tap on the batch norm forces. (That a whole MobileNet leaves no relu6 to run
// on its own: onednn_kernels_test.cpp.)
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

// x [4, 4, 2] → conv without bias → batch_norm → relu6 → global average pool → dense. Four channels take oneDNN's
// blocked layout with 12 padding lanes; 32 fill two whole blocks.
json image_block(int64_t channels) {
  return Ir()
      .input("x", {4, 4, 2})
      .conv("conv", "x", 2, {4, 4, channels},
            {{"filters", channels}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}, {"use_bias", false}})
      .batch_norm("bn", "conv", {4, 4, channels})
      .node("clip", "activation", {"bn"}, {4, 4, channels}, {{"activation", "relu6"}})
      .node("pool", "global_avg_pool", {"clip"}, {channels})
      .dense("out", "pool", channels, 3)
      .classifier("out");
}

// x [6] → dense without bias → batch_norm → relu6 → dense. Five features are copied into a layout blocked by 16;
// sixteen are read in place in runs of 16, twenty-four in runs of 8.
json vector_block(int64_t features) {
  return Ir()
      .input("x", {6})
      .dense("d1", "x", 6, features, "linear", false)
      .batch_norm("bn", "d1", {features})
      .node("clip", "activation", {"bn"}, {features}, {{"activation", "relu6"}})
      .dense("out", "clip", features, 3)
      .classifier("out");
}

struct Case {
  const char* what;
  json graph;
  Shape input;
};

std::vector<Case> cases() {
  return {{"image, 4 channels", image_block(4), {4, 4, 2}},
          {"image, 32 channels", image_block(32), {4, 4, 2}},
          {"vector, 5 features", vector_block(5), {6}},
          {"vector, 16 features", vector_block(16), {6}},
          {"vector, 24 features", vector_block(24), {6}}};
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

// Everything one training step and one inference forward produce.
struct StepResults {
  std::vector<float> train_logits, loss, inference_logits;
  std::map<std::string, std::vector<float>> gradients, parameters;
  std::vector<float> tapped_bn;  // the batch norm's output before the clip, when tapped
};

StepResults one_step(const Case& c, bool tap_bn) {
  StepResults r;
  Harness h;
  const Status compiled =
      h.compile(c.graph, {{"batch", 8}, {"precision", "float32"}, {"optimizer", {{"type", "sgd"}}}});
  EXPECT_TRUE(compiled.ok()) << compiled.message;
  Example params = params_for(c.graph, 31);
  EXPECT_TRUE(h.set_state("parameters", params).ok());
  TapLog log;
  if (tap_bn) {
    EXPECT_TRUE(h.set_taps(json::array({"bn"}), &record_tap, &log).ok());
  }
  Example batch = batch_of(c.input, 8, 3, 32), out, inferred;
  EXPECT_TRUE(h.forward(batch, out, true).ok());
  EXPECT_TRUE(h.backward().ok());
  r.tapped_bn = log.seen["bn"];
  r.train_logits = values(out, "out");
  r.loss = {scalar(out, "loss")};
  Example grads = h.state("gradients");
  for (const char* name : {"conv/kernel", "d1/kernel", "bn/gamma", "bn/beta", "out/kernel", "out/bias"})
    if (grads.find(name)) r.gradients[name] = values(grads, name);
  EXPECT_TRUE(h.forward(batch, inferred, false).ok());  // with the moving statistics the step moved
  r.inference_logits = values(inferred, "out");
  Example state = h.state("parameters");
  for (const char* name : {"bn/moving_mean", "bn/moving_variance"}) r.parameters[name] = values(state, name);
  return r;
}

}  // namespace

TEST(OnednnBatchNormRelu6, GradientsMatchFiniteDifferences) {
  GradCheck check;
  check.param_scale = 2.5f;  // at 3, more than half of a kernel's checked entries stepped across the clip's kinks
  check.eps = 7e-3;  // as for batch_norm alone (backend_conformance_test.cpp): the batch mean cancels the rest
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.what);
    expect_gradients_match(c.graph, batch_of(c.input, 6, 3, 33), 6, check);
  }
}

TEST(OnednnBatchNormRelu6, AgreesWithOnednnsBatchNormAndClipPrimitives) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.what);
    const StepResults fused = one_step(c, false), apart = one_step(c, true);
    // The tapped run kept the batch norm's output, so it ran the two primitives; its values crossed both bounds.
    ASSERT_FALSE(apart.tapped_bn.empty());
    EXPECT_LT(*std::min_element(apart.tapped_bn.begin(), apart.tapped_bn.end()), 0.0f);
    EXPECT_GT(*std::max_element(apart.tapped_bn.begin(), apart.tapped_bn.end()), 6.0f);
    EXPECT_LT(distance(fused.train_logits, apart.train_logits), 1e-5);
    EXPECT_LT(distance(fused.loss, apart.loss), 1e-6);
    EXPECT_LT(distance(fused.inference_logits, apart.inference_logits), 1e-5);
    ASSERT_EQ(fused.gradients.size(), apart.gradients.size());
    for (const auto& [name, g] : fused.gradients) EXPECT_LT(distance(g, apart.gradients.at(name)), 1e-4) << name;
    for (const auto& [name, p] : fused.parameters) EXPECT_LT(distance(p, apart.parameters.at(name)), 1e-6) << name;
  }
}

// The graph's input normalised, values near 50 that spread by 0.05: the layer has no input gradient to write, and
// a mean far from the spread still agrees with oneDNN's primitives. (Within what float32 holds of such values: one
// step of 50 is about 1e-4 of their spread, so the two may differ by that much.)
TEST(OnednnBatchNormRelu6, TheGraphInputNormalisedFarFromZeroAgreesWithOnednn) {
  const json g = Ir()
                     .input("x", {6})
                     .batch_norm("bn", "x", {6})
                     .node("clip", "activation", {"bn"}, {6}, {{"activation", "relu6"}})
                     .dense("out", "clip", 6, 3)
                     .classifier("out");
  Example batch = batch_of({6}, 8, 3, 34);
  std::vector<float> x = values(batch, "x");
  for (float& v : x) v = 50.0f + 0.05f * v;
  put(batch, "x", {8, 6}, x);
  StepResults r[2];
  for (int tapped = 0; tapped < 2; ++tapped) {
    Harness h;
    ASSERT_TRUE(h.compile(g, {{"batch", 8}, {"precision", "float32"}, {"optimizer", {{"type", "sgd"}}}}).ok());
    Example params = params_for(g, 35);
    ASSERT_TRUE(h.set_state("parameters", params).ok());
    TapLog log;
    if (tapped) {
      ASSERT_TRUE(h.set_taps(json::array({"bn"}), &record_tap, &log).ok());
    }
    Example out;
    ASSERT_TRUE(h.forward(batch, out, true).ok());
    ASSERT_TRUE(h.backward().ok());
    r[tapped].train_logits = values(out, "out");
    Example grads = h.state("gradients");
    for (const char* name : {"bn/gamma", "bn/beta"}) r[tapped].gradients[name] = values(grads, name);
  }
  EXPECT_LT(distance(r[0].train_logits, r[1].train_logits), 3e-4);
  for (const auto& [name, grad] : r[0].gradients) EXPECT_LT(distance(grad, r[1].gradients.at(name)), 3e-4) << name;
}

// Work is split by channel group and example, and sums over examples are added in example order: a layer large
// enough to run on two threads gives the same bits on one.
TEST(OnednnBatchNormRelu6, TwoThreadsGiveTheBitsOfOne) {
  const json g = Ir()
                     .input("x", {16, 16, 32})
                     .batch_norm("bn", "x", {16, 16, 32})
                     .node("clip", "activation", {"bn"}, {16, 16, 32}, {{"activation", "relu6"}})
                     .node("pool", "global_avg_pool", {"clip"}, {32})
                     .dense("out", "pool", 32, 3)
                     .classifier("out");
  Example batch = batch_of({16, 16, 32}, 8, 3, 36);  // 65,536 values: past the kernels' threshold for a team
  std::map<std::string, std::vector<float>> seen[2];
  for (int threads = 1; threads <= 2; ++threads) {
    Harness h(json{{"threads", threads}});
    ASSERT_TRUE(h.compile(g, {{"batch", 8}, {"precision", "float32"}, {"optimizer", {{"type", "sgd"}}}}).ok());
    Example params = params_for(g, 37);
    ASSERT_TRUE(h.set_state("parameters", params).ok());
    Example out;
    ASSERT_TRUE(h.forward(batch, out, true).ok());
    ASSERT_TRUE(h.backward().ok());
    seen[threads - 1]["out"] = values(out, "out");
    Example grads = h.state("gradients"), state = h.state("parameters");
    for (const char* name : {"bn/gamma", "bn/beta"}) seen[threads - 1][name] = values(grads, name);
    for (const char* name : {"bn/moving_mean", "bn/moving_variance"}) seen[threads - 1][name] = values(state, name);
  }
  for (const auto& [name, v] : seen[0]) EXPECT_EQ(v, seen[1].at(name)) << name;
}
