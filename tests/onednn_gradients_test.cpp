// The oneDNN "cpu" backend's gradients of every op against central differences of the loss.
#include "ramjet/plugin/example.hpp"
#include "onednn_harness.hpp"
#include "onednn_models.hpp"
#include "gradient_check.hpp"
#include "ramjet/plugin/log.hpp"

#include <gtest/gtest.h>

#include "ramjet/plugin/tensor.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace ramjet::core;
using namespace ramjet::test::cpu_backend;

// ---- gradients against finite differences -----------------------------------------------------------------

namespace {
// The default check with parameters drawn from [-scale, scale].
GradCheck scaled_params(float scale) {
  GradCheck c;
  c.param_scale = scale;
  return c;
}
}  // namespace

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
                      // Depthwise, multiplier 1 (MobileNet's): stride 2 with padding at the bottom and right only,
                      // and an uneven kernel with strides.
                      json{{"filters", 4}, {"kernel", {3, 3}}, {"groups", 4}, {"strides", {2, 2}},
                           {"padding", {0, 1, 0, 1}}, {"activation", "relu6"}},
                      json{{"filters", 4}, {"kernel", {3, 2}}, {"groups", 4}, {"strides", {1, 2}},
                           {"padding", {1, 1, 0, 1}}, {"use_bias", false}},
                      json{{"filters", 3}, {"kernel", {2, 2}}, {"use_bias", false}, {"activation", "tanh"}}));

// 16 channels in and out, 3x3, stride 1, float32: the shape the backend runs with Winograd's algorithm (forward,
// backward-data and backward-weights), with a bias and without, with a relu post-op and without.
TEST(OnednnConvGradientsWide, WinogradShapesMatchFiniteDifferences) {
  for (const bool use_bias : {true, false}) {
    const int64_t C = 16, H = 6, W = 6;
    json g = Ir()
                 .input("x", {H, W, 2})
                 .conv("conv_a", "x", 2, {H, W, C},
                       {{"filters", C}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}, {"activation", "tanh"}})
                 .conv("conv_b", "conv_a", C, {H, W, C},
                       {{"filters", C}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}, {"use_bias", use_bias},
                        {"activation", use_bias ? "linear" : "relu"}})
                 .node("flat", "flatten", {"conv_b"}, {H * W * C})
                 .dense("out", "flat", H * W * C, 3)
                 .classifier("out");
    SCOPED_TRACE(use_bias ? "with a bias" : "without a bias");
    expect_gradients_match(g, batch_of({H, W, 2}, 3, 3, 4), 3);
  }
}

// A depthwise convolution over 24 channels (a block of 16 and a partial one, or three of 8 where oneDNN lays
// channels out in blocks of 8), stride 1 and stride 2.
TEST(OnednnConvGradientsWide, DepthwiseInputGradientsOverSeveralChannelRunsMatchFiniteDifferences) {
  for (const int64_t stride : {1, 2}) {
    const int64_t C = 24, H = 7, W = 7, O = stride == 1 ? 7 : 4;
    json g = Ir()
                 .input("x", {H, W, 2})
                 .conv("conv_a", "x", 2, {H, W, C},
                       {{"filters", C}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}, {"activation", "tanh"}})
                 .conv("depthwise", "conv_a", C, {O, O, C},
                       {{"filters", C}, {"kernel", {3, 3}}, {"groups", C}, {"strides", {stride, stride}},
                        {"padding", {1, 1, 1, 1}}, {"activation", "tanh"}})
                 .node("flat", "flatten", {"depthwise"}, {O * O * C})
                 .dense("out", "flat", O * O * C, 3)
                 .classifier("out");
    SCOPED_TRACE("stride " + std::to_string(stride));
    expect_gradients_match(g, batch_of({H, W, 2}, 3, 3, 5), 3);
  }
}

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

// A residual block's add with the relu (or relu6) that reads it: the plan fuses the pair (the activation becomes
// the binary primitive's post-op, its backward works from the sum).
json residual_add_then(const std::string& activation) {
  return Ir()
      .input("x", {5, 5, 3})
      .conv("c1", "x", 3, {5, 5, 4}, {{"filters", 4}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}})
      .conv("c2", "x", 3, {5, 5, 4}, {{"filters", 4}, {"kernel", {1, 1}}})
      .node("sum", "add", {"c1", "c2"}, {5, 5, 4})
      .node("act", "activation", {"sum"}, {5, 5, 4}, {{"activation", activation}})
      .node("gap", "global_avg_pool", {"act"}, {4})
      .dense("fc", "gap", 4, 3)
      .classifier("fc");
}

TEST(OnednnGradients, ResidualAddWithItsActivationFused) {
  for (const char* activation : {"relu", "relu6"}) {
    SCOPED_TRACE(activation);
    expect_gradients_match(residual_add_then(activation), batch_of({5, 5, 3}, 3, 3, 9), 3, scaled_params(1.5f));
  }
}

// The fused pair against the add and the activation apart (a tap on the sum keeps its value, so the activation
// runs as its own layer): the same step to float32's rounding; and the plan says it fused the pair.
TEST(OnednnGradients, ResidualAddWithItsActivationFusedAgreesWithTheTwoApart) {
  for (const char* activation : {"relu", "relu6"}) {
    SCOPED_TRACE(activation);
    const json g = residual_add_then(activation);
    std::vector<float> logits[2];
    std::map<std::string, std::vector<float>> grads[2];
    for (int tapped = 0; tapped < 2; ++tapped) {
      const ramjet_log_level before = ramjet::core::log_level();
      ramjet::core::set_log_level(RAMJET_LOG_DEBUG);
      testing::internal::CaptureStderr();
      Harness h;
      const Status compiled =
          h.compile(g, {{"batch", 4}, {"precision", "float32"}, {"optimizer", {{"type", "sgd"}}}});
      Example params = random_params(g, 41, 1.5f);
      const bool set = h.set_state("parameters", params).ok();
      TapLog log;
      const bool tapped_ok = !tapped || h.set_taps(json::array({"sum"}), &record_tap, &log).ok();
      Example batch = batch_of({5, 5, 3}, 4, 3, 42), out;
      const bool stepped = h.forward(batch, out, true).ok() && h.backward().ok();
      const std::string err = testing::internal::GetCapturedStderr();
      ramjet::core::set_log_level(before);
      ASSERT_TRUE(compiled.ok()) << compiled.message;
      ASSERT_TRUE(set && tapped_ok && stepped);
      // The training plan's log line names what it fused away; with the tap, the sum keeps its own value.
      const size_t training = err.rfind("training");
      ASSERT_NE(training, std::string::npos) << err;
      const std::string line = err.substr(training, err.find('\n', training) - training);
      EXPECT_EQ(line.find("fused into their readers: sum") != std::string::npos, tapped == 0) << line;
      logits[tapped] = values(out, "fc");
      Example g_out = h.state("gradients");
      for (const char* name : {"c1/kernel", "c1/bias", "c2/kernel", "c2/bias", "fc/kernel"})
        grads[tapped][name] = values(g_out, name);
    }
    EXPECT_LT(distance(logits[0], logits[1]), 1e-6);
    for (const auto& [name, v] : grads[0]) EXPECT_LT(distance(v, grads[1].at(name)), 1e-5) << name;
  }
}

// The same on maps large enough that the fused backward (kernels.hpp's clip_grad_to_both) splits them over two
// threads in vectors, in float32 and bf16: the same bits as the activation's own backward and the add's copies.
TEST(OnednnGradients, ALargeResidualAddWithItsActivationGivesTheBitsOfTheTwoApart) {
  const json g = Ir()
                     .input("x", {16, 16, 3})
                     .conv("c1", "x", 3, {16, 16, 16}, {{"filters", 16}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}})
                     .conv("c2", "x", 3, {16, 16, 16}, {{"filters", 16}, {"kernel", {1, 1}}})
                     .node("sum", "add", {"c1", "c2"}, {16, 16, 16})  // 16 x 16 x 16 x 16 values: a team's work
                     .node("act", "activation", {"sum"}, {16, 16, 16}, {{"activation", "relu6"}})
                     .node("gap", "global_avg_pool", {"act"}, {16})
                     .dense("fc", "gap", 16, 3)
                     .classifier("fc");
  for (const char* precision : {"float32", "mixed_bfloat16"}) {
    SCOPED_TRACE(precision);
    std::map<std::string, std::vector<float>> grads[2];
    for (int tapped = 0; tapped < 2; ++tapped) {
      Harness h(json{{"threads", 2}});
      const Status compiled =
          h.compile(g, {{"batch", 16}, {"precision", precision}, {"optimizer", {{"type", "sgd"}}}});
      if (!compiled.ok() && compiled.message.find("needs a CPU with AVX-512") != std::string::npos)
        GTEST_SKIP() << "this CPU cannot run mixed_bfloat16: " << compiled.message;
      ASSERT_TRUE(compiled.ok()) << compiled.message;
      Example params = random_params(g, 43, 2.0f);  // sums that cross 0 and 6
      ASSERT_TRUE(h.set_state("parameters", params).ok());
      TapLog log;
      if (tapped) {
        ASSERT_TRUE(h.set_taps(json::array({"sum"}), &record_tap, &log).ok());
      }
      Example batch = batch_of({16, 16, 3}, 16, 3, 44), out;
      ASSERT_TRUE(h.forward(batch, out, true).ok());
      ASSERT_TRUE(h.backward().ok());
      Example g_out = h.state("gradients");
      for (const char* name : {"c1/kernel", "c1/bias", "c2/kernel", "c2/bias"}) grads[tapped][name] = values(g_out, name);
    }
    for (const auto& [name, v] : grads[0]) EXPECT_EQ(v, grads[1].at(name)) << name;
  }
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
  expect_gradients_match(g, batch_of({4, 4, 16}, 2, 3, 8), 2, scaled_params(0.2f));
}

TEST(OnednnGradients, Softmax) {
  json g = Ir()
               .input("x", {5})
               .dense("d1", "x", 5, 6)
               .node("sm", "softmax", {"d1"}, {6})
               .dense("d2", "sm", 6, 3)
               .classifier("d2");
  expect_gradients_match(g, batch_of({5}, 4, 3, 9), 4, scaled_params(1.5f));
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
