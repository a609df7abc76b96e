// The cpu backend's mixed_bfloat16 precision through the C ABI: every layer type's forward and backward against
// the same graph in float32 (bf16 keeps 8 bits of mantissa, so they agree to about 1e-2), training that learns,
// host-visible state that stays float32, the "mixed_bfloat16" precision_policy component's answers, and
// mixed_float16 refused.
#include "ramjet/plugin/components.hpp"
#include "ramjet/plugin/example.hpp"
#include "ramjet/plugin/host_api.hpp"
#include "ramjet/plugin/tensor.hpp"
#include "onednn_harness.hpp"
#include "ramjet/model/graph.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <random>

using namespace ramjet::core;
using namespace ramjet::test::cpu_backend;

namespace {

constexpr DLDataType kBF16{kDLBfloat, 16, 1};

bool same_dtype(DLDataType a, DLDataType b) { return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes; }

// ---- comparisons and graphs --------------------------------------------------------------------------------

// |got - want| / |want| over the whole tensor.
double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  EXPECT_EQ(got.size(), want.size());
  double d2 = 0, w2 = 0;
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    d2 += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    w2 += double(want[i]) * want[i];
  }
  return std::sqrt(d2) / std::max(std::sqrt(w2), 1e-12);
}

// The share of entries within `tolerance` of the tensor's root mean square of `want`.
double share_close(const std::vector<float>& got, const std::vector<float>& want, double tolerance) {
  double w2 = 0;
  for (float w : want) w2 += double(w) * w;
  const double bound = tolerance * std::sqrt(w2 / std::max<size_t>(want.size(), 1));
  size_t close = 0;
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) close += std::fabs(double(got[i]) - want[i]) <= bound;
  return static_cast<double>(close) / std::max<size_t>(want.size(), 1);
}

json options(const char* precision, int64_t batch) {
  return {{"batch", batch}, {"precision", precision}, {"optimizer", {{"type", "adam"}}}};
}

// Kernels uniform with variance 1 / fan-in (so activations and logits stay near 1 and the softmax is not
// saturated: a saturated one turns bf16's small logit errors into large relative errors of tiny probabilities),
// biases and shifts small, scales and variances around 1.
Example fan_in_params(const json& graph, uint32_t seed) {
  std::mt19937 rng(seed);
  Example e;
  for (const auto& [name, spec] : graph["params"].items()) {
    const Shape shape = spec["shape"].get<Shape>();
    float lo = -0.1f, hi = 0.1f;
    if (name.ends_with("/moving_variance") || name.ends_with("/gamma")) {
      lo = 0.5f, hi = 1.5f;
    } else if (name.ends_with("/kernel")) {
      hi = std::sqrt(3.0f * static_cast<float>(shape.back()) / static_cast<float>(count_of(shape)));
      lo = -hi;
    }
    put(e, name, shape, uniform(static_cast<size_t>(count_of(shape)), rng, lo, hi));
  }
  return e;
}

// One case: a graph, its per-example input shape, classes (or a regression target shape).
struct Bf16Case {
  std::string name;
  json graph;
  Shape input;
  int64_t classes = 0;
  Shape target = {};
  int64_t vocabulary = 0;  // a graph built from a manifest model: inputs and labels from its IR (token IDs below this)
};
void PrintTo(const Bf16Case& c, std::ostream* os) { *os << c.name; }

std::vector<Bf16Case> cases() {
  std::vector<Bf16Case> c;
  c.push_back({"conv_relu_blocked", Ir().input("x", {8, 8, 16})
                                        .conv("conv", "x", 16, {8, 8, 32}, {{"filters", 32}, {"kernel", {3, 3}},
                                                                           {"padding", {1, 1, 1, 1}}, {"activation", "relu"}})
                                        .node("flat", "flatten", {"conv"}, {2048})
                                        .dense("fc", "flat", 2048, 10)
                                        .classifier("fc"),
               {8, 8, 16}, 10});
  c.push_back({"conv_strided_dilated_grouped_gelu",
               Ir().input("x", {9, 8, 4})
                   .conv("a", "x", 4, {9, 8, 8}, {{"filters", 8}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}})
                   .conv("conv", "a", 8, {3, 5, 8}, {{"filters", 8}, {"kernel", {3, 2}}, {"strides", {2, 2}},
                                                     {"padding", {1, 0, 1, 1}}, {"dilation", {2, 1}}, {"groups", 2},
                                                     {"activation", "gelu"}})
                   .node("gap", "global_avg_pool", {"conv"}, {8})
                   .dense("fc", "gap", 8, 5)
                   .classifier("fc"),
               {9, 8, 4}, 5});
  c.push_back({"depthwise_and_global_max_pool",
               Ir().input("x", {7, 7, 8})
                   .conv("a", "x", 8, {7, 7, 16}, {{"filters", 16}, {"kernel", {1, 1}}})
                   .conv("dw", "a", 16, {7, 7, 16}, {{"filters", 16}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}},
                                                     {"groups", 16}, {"activation", "relu6"}})
                   .node("gmp", "global_max_pool", {"dw"}, {16})
                   .dense("fc", "gmp", 16, 4)
                   .classifier("fc"),
               {7, 7, 8}, 4});
  c.push_back({"max_and_avg_pool",
               Ir().input("x", {8, 8, 3})
                   .conv("a", "x", 3, {8, 8, 16}, {{"filters", 16}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}})
                   .node("max", "max_pool", {"a"}, {4, 4, 16}, {{"pool", {2, 2}}})
                   .node("avg", "avg_pool", {"max"}, {2, 2, 16}, {{"pool", {3, 3}}, {"strides", {2, 2}}, {"padding", {1, 1, 1, 1}}})
                   .node("flat", "flatten", {"avg"}, {64})
                   .dense("fc", "flat", 64, 6)
                   .classifier("fc"),
               {8, 8, 3}, 6});
  for (const char* act : {"relu", "sigmoid", "tanh", "gelu", "elu", "swish", "softplus"})
    c.push_back({std::string("activation_") + act,
                 Ir().input("x", {12})
                     .dense("d1", "x", 12, 32)
                     .node("act", "activation", {"d1"}, {32}, {{"activation", act}})
                     .dense("d2", "act", 32, 5)
                     .classifier("d2"),
                 {12}, 5});
  c.push_back({"residual_add_with_fan_out_and_input_add",
               Ir().input("x", {6, 6, 16})
                   .conv("a", "x", 16, {6, 6, 16}, {{"filters", 16}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}},
                                                    {"activation", "elu"}})
                   .conv("b", "a", 16, {6, 6, 16}, {{"filters", 16}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}})
                   .node("sum", "add", {"a", "b", "x"}, {6, 6, 16})
                   .node("flat", "flatten", {"sum"}, {576})
                   .dense("fc", "flat", 576, 4)
                   .classifier("fc"),
               {6, 6, 16}, 4});
  // d1's gradient is the sum of its two readers' (add_halves): 33 features a row, so the batch's values are no
  // multiple of the 16 its vector loop takes at a time.
  c.push_back({"fan_in_of_a_value_not_a_multiple_of_16",
               Ir().input("x", {12})
                   .dense("d1", "x", 12, 33, "tanh")
                   .dense("d2", "d1", 33, 5)
                   .dense("d3", "d1", 33, 5)
                   .node("sum", "add", {"d2", "d3"}, {5})
                   .classifier("sum"),
               {12}, 5});
  c.push_back({"concat_of_two_branches",
               Ir().input("x", {5, 5, 3})
                   .conv("a", "x", 3, {5, 5, 8}, {{"filters", 8}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}})
                   .conv("b", "x", 3, {5, 5, 16}, {{"filters", 16}, {"kernel", {1, 1}}, {"activation", "relu"}})
                   .node("cat", "concat", {"a", "b"}, {5, 5, 24})
                   .node("flat", "flatten", {"cat"}, {600})
                   .dense("fc", "flat", 600, 3)
                   .classifier("fc"),
               {5, 5, 3}, 3});
  c.push_back({"pad_crop_depth_to_space_and_concat_on_rows",
               Ir().input("x", {5, 5, 3})
                   .conv("a", "x", 3, {5, 5, 64}, {{"filters", 64}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}})
                   .node("pad", "zero_padding2d", {"a"}, {8, 6, 64}, {{"padding", {1, 2, 0, 1}}})
                   .node("crop", "cropping2d", {"pad"}, {5, 5, 64}, {{"cropping", {2, 1, 1, 0}}})
                   .node("d2s", "depth_to_space", {"crop"}, {10, 10, 16}, {{"block_size", 2}})
                   .conv("b", "x", 3, {5, 5, 16}, {{"filters", 16}, {"kernel", {1, 1}}, {"activation", "relu"}})
                   .node("cols", "concat", {"b", "b"}, {5, 10, 16}, {{"axis", -2}})
                   .node("rows", "concat", {"d2s", "cols"}, {15, 10, 16}, {{"axis", -3}})
                   .node("flat", "flatten", {"rows"}, {2400})
                   .dense("fc", "flat", 2400, 3)
                   .classifier("fc"),
               {5, 5, 3}, 3});
  c.push_back({"dropout",
               Ir().input("x", {10})
                   .dense("d1", "x", 10, 33, "relu")
                   .node("drop", "dropout", {"d1"}, {33}, {{"rate", 0.3}})
                   .dense("d2", "drop", 33, 4)
                   .classifier("d2"),
               {10}, 4});
  {
    Ir ir;
    ir.input("x", {6, 6, 2}).conv("c", "x", 2, {6, 6, 16}, {{"filters", 16}, {"kernel", {3, 3}},
                                                             {"padding", {1, 1, 1, 1}}, {"use_bias", false}});
    ir.batch_norm("bn", "c", {6, 6, 16})
        .node("relu", "activation", {"bn"}, {6, 6, 16}, {{"activation", "relu"}})
        .node("flat", "flatten", {"relu"}, {576})
        .dense("d1", "flat", 576, 8, "linear", false);
    ir.batch_norm("bn2", "d1", {8}).node("tanh", "activation", {"bn2"}, {8}, {{"activation", "tanh"}});
    ir.dense("fc", "tanh", 8, 3);
    c.push_back({"batch_norm_on_images_and_vectors", ir.classifier("fc"), {6, 6, 2}, 3});
  }
  c.push_back({"softmax_with_mse",
               Ir().input("x", {7})
                   .dense("d1", "x", 7, 6)
                   .node("sm", "softmax", {"d1"}, {6})
                   .regression("sm", "mse"),
               {7}, 0, {6}});
  // The sequence layers, built by the core from manifest models as a run builds them.
  auto sequence = [&](const std::string& name, const json& layers, int64_t vocabulary, json loss) {
    const json input = vocabulary > 0 ? json{{"tokens", {{"shape", {9}}, {"dtype", "int32"}}}} : json{{"x", {9, 12}}};
    const json model = {{"input", input}, {"layers", layers}, {"loss", loss}};
    c.push_back({name, build_graph(model, Origin{"test.json"}).ir, {}, 7, {}, std::max<int64_t>(vocabulary, 1)});
  };
  const json sparse = {{"type", "sparse_softmax_cross_entropy"}};
  sequence("transformer_block",
           {{{"type", "embedding"}, {"input_dim", 13}, {"output_dim", 16}},
            {{"type", "position_embedding"}, {"sequence_length", 9}, {"name", "pos"}},
            {{"type", "layer_norm"}},
            {{"type", "multi_head_attention"}, {"num_heads", 4}, {"key_dim", 4}, {"use_causal_mask", true}, {"name", "att"}},
            {{"type", "add"}, {"inputs", {"pos", "att"}}, {"name", "res"}},
            {{"type", "rms_norm"}},
            {{"type", "dense"}, {"units", 32}, {"activation", "gelu"}},
            {{"type", "dense"}, {"units", 16}, {"name", "mlp"}},
            {{"type", "add"}, {"inputs", {"res", "mlp"}}},
            {{"type", "dense"}, {"units", 7}}},
           13, sparse);
  sequence("matmul_transpose_subtract",
           {{{"type", "dense"}, {"units", 12}, {"name", "a"}},
            {{"type", "matmul"}, {"inputs", {"a", "x"}}, {"transpose_b", true}, {"name", "ax"}},  // [9, 9]
            {{"type", "transpose"}, {"perm", {1, 0}}, {"name", "t"}},
            {{"type", "subtract"}, {"inputs", {"t", "ax"}}},
            {{"type", "dense"}, {"units", 7}}},
           0, sparse);
  sequence("multiply_and_conv1d",
           {{{"type", "dense"}, {"units", 12}, {"name", "a"}},
            {{"type", "dense"}, {"units", 12}, {"name", "b"}, {"inputs", "x"}, {"activation", "sigmoid"}},
            {{"type", "multiply"}, {"inputs", {"a", "b"}}},  // a gate, as GLU blocks have
            {{"type", "conv1d"}, {"filters", 8}, {"kernel", 3}, {"padding", "same"}, {"activation", "leaky_relu"}},
            {{"type", "dense"}, {"units", 7}}},
           0, sparse);
  sequence("token_losses_with_smoothing",
           {{{"type", "dense"}, {"units", 7}}}, 0,
           {{"type", "sparse_softmax_cross_entropy"}, {"label_smoothing", 0.1}});
  c.push_back({"reshape_between_convolutions",
               Ir().input("x", {4, 4, 8})
                   .conv("a", "x", 8, {4, 4, 16}, {{"filters", 16}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}})
                   .node("r", "reshape", {"a"}, {8, 8, 4}, {{"shape", {8, 8, 4}}})
                   .conv("b", "r", 4, {6, 6, 2}, {{"filters", 2}, {"kernel", {3, 3}}})
                   .regression("b", "mse"),
               {4, 4, 8}, 0, {6, 6, 2}});
  {
    // The layers that make images larger (a U-Net decoder's), built by the core as a run builds them.
    const json model = {
        {"input", {{"x", {4, 5, 8}}}},
        {"layers",
         {{{"type", "conv2d_transpose"}, {"filters", 16}, {"kernel", 3}, {"strides", 2}, {"padding", "same"},
           {"activation", "relu"}},
          {{"type", "upsampling2d"}, {"interpolation", "bilinear"}},
          {{"type", "resize"}, {"height", 7}, {"width", 9}, {"interpolation", "nearest"}},
          {{"type", "conv2d_transpose"}, {"filters", 3}, {"kernel", 2}, {"strides", 2}, {"activation", "tanh"}}}},
        {"loss", {{"type", "mse"}}}};
    c.push_back({"upsampling_layers", build_graph(model, Origin{"test.json"}).ir, {}, 0, {}, 1});
  }
  return c;
}

// bf16 rounds inputs, weights and every activation to 8 bits of mantissa (relative 2^-9); through a few layers the
// outputs stay within 1e-2 of float32. Gradients through smooth layers do too, but where a relu or a max pool
// decides (a value near 0, two near-equal maxima), bf16's rounding can flip the decision: each flip moves whole
// rows of a kernel's gradient, a few percent of its norm on these small batches. So most entries must agree
// closely and the whole within a few percent; a real bug (a wrong layout, mask or missing sum) is off by O(1).
constexpr double kOutputTolerance = 1e-2;
// The backend refuses mixed_bfloat16 on a CPU without AVX-512 (plugins/onednn/options.cpp: oneDNN would run bf16 on
// its reference loops there). Those tests then have nothing to check and skip with the backend's own message; on an
// AVX-512 CPU the compile must succeed and everything runs.
bool refused_for_lack_of_avx512(const Status& s) {
  return s.code == RAMJET_ERR_UNSUPPORTED && s.message.find("needs a CPU with AVX-512") != std::string::npos;
}
#define SKIP_WITHOUT_BF16_CPU(status) \
  if (refused_for_lack_of_avx512(status)) GTEST_SKIP() << "this CPU cannot run mixed_bfloat16: " << (status).message

constexpr double kGradientTolerance = 6e-2;   // |bf16 - f32| / |f32| of each parameter's gradient
constexpr double kEntryTolerance = 2e-2;      // an entry is close within this share of the gradient's RMS ...
constexpr double kCloseShare = 0.85;          // ... and this share of the entries must be

}  // namespace

class OnednnBf16Layers : public ::testing::TestWithParam<Bf16Case> {};

TEST_P(OnednnBf16Layers, ForwardAndBackwardAgreeWithFloat32) {
  const Bf16Case& c = GetParam();
  const int64_t batch = 6;
  Harness f32, bf16;
  Status s = f32.compile(c.graph, options("float32", batch));
  ASSERT_TRUE(s.ok()) << s.message;
  s = bf16.compile(c.graph, options("mixed_bfloat16", batch));
  SKIP_WITHOUT_BF16_CPU(s);
  ASSERT_TRUE(s.ok()) << s.message;
  Example params = fan_in_params(c.graph, 31);
  ASSERT_TRUE(f32.set_state("parameters", params).ok());
  ASSERT_TRUE(bf16.set_state("parameters", params).ok());

  Example inputs = c.vocabulary > 0 ? batch_for_graph(c.graph, batch, c.vocabulary, c.classes, 17)
                                    : batch_of(c.input, batch, c.classes, 17, c.target);
  Example want, got;
  s = f32.forward(inputs, want, true);
  ASSERT_TRUE(s.ok()) << s.message;
  s = bf16.forward(inputs, got, true);
  ASSERT_TRUE(s.ok()) << s.message;
  const std::string output = c.graph["outputs"][0];
  const DLTensor* out = got.find(output);
  ASSERT_NE(out, nullptr);
  EXPECT_TRUE(same_dtype(out->dtype, kF32)) << "outputs reach the host as float32";
  EXPECT_LT(relative_error(values(got, output), values(want, output)), kOutputTolerance) << output;
  EXPECT_NEAR(scalar(got, "loss"), scalar(want, "loss"), kOutputTolerance * (1 + std::fabs(scalar(want, "loss"))));

  ASSERT_TRUE(f32.backward().ok());
  s = bf16.backward();
  ASSERT_TRUE(s.ok()) << s.message;
  Example want_grads = f32.state("gradients"), got_grads = bf16.state("gradients");
  ASSERT_EQ(got_grads.entries.size(), want_grads.entries.size());
  for (const auto& entry : want_grads.entries) {
    // Softmax ignores a constant added to every score of a row: an attention's key bias never moves the loss.
    if (entry.name.ends_with("key/bias")) continue;
    const DLTensor* g = got_grads.find(entry.name);
    ASSERT_NE(g, nullptr) << entry.name;
    EXPECT_TRUE(same_dtype(g->dtype, kF32)) << entry.name << ": gradients stay float32";
    const auto w = values(want_grads, entry.name);
    double norm = 0;
    for (float v : w) norm += double(v) * v;
    EXPECT_GT(std::sqrt(norm), 1e-6) << entry.name << ": a zero gradient would prove nothing";
    const auto g_bf16 = values(got_grads, entry.name);
    EXPECT_LT(relative_error(g_bf16, w), kGradientTolerance) << entry.name;
    EXPECT_GE(share_close(g_bf16, w, kEntryTolerance), kCloseShare) << entry.name;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryLayerType, OnednnBf16Layers, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

// ---- training and state -----------------------------------------------------------------------------------

namespace {

json bf16_cnn() {
  return Ir()
      .input("x", {8, 8, 1})
      .conv("conv", "x", 1, {6, 6, 16}, {{"filters", 16}, {"kernel", {3, 3}}, {"activation", "relu"}})
      .node("pool", "max_pool", {"conv"}, {3, 3, 16}, {{"pool", {2, 2}}})
      .node("flat", "flatten", {"pool"}, {144})
      .dense("fc", "flat", 144, 2)
      .classifier("fc");
}

void expect_float32_state(Example& state, const json& graph, const char* which) {
  for (const auto& entry : state.entries) {
    const DLTensor& t = entry.tensor->dl_tensor;
    EXPECT_TRUE(same_dtype(t.dtype, kF32)) << which << " '" << entry.name << "'";
    std::string param = entry.name;
    if (std::string_view(which) == "optimizer") param = param.substr(0, param.rfind('/'));
    ASSERT_TRUE(graph["params"].contains(param)) << which << " '" << entry.name << "'";
    EXPECT_EQ(Shape(t.shape, t.shape + t.ndim), graph["params"][param]["shape"].get<Shape>()) << entry.name;
  }
}

}  // namespace

TEST(OnednnBf16Training, SmallCnnLearnsAndTheStateStaysFloat32) {
  const json g = bf16_cnn();
  Harness p;
  Status s = p.compile(g, options("mixed_bfloat16", 32));
  SKIP_WITHOUT_BF16_CPU(s);
  ASSERT_TRUE(s.ok()) << s.message;
  Example params = fan_in_params(g, 3);
  ASSERT_TRUE(p.set_state("parameters", params).ok());
  std::mt19937 rng(21);
  std::vector<float> losses;
  for (int step = 1; step <= 40; ++step) {
    Example batch = separable_batch(32, {8, 8, 1}, rng), out;
    ASSERT_TRUE(p.forward(batch, out, true, static_cast<uint64_t>(step)).ok());
    losses.push_back(scalar(out, "loss"));
    ASSERT_TRUE(p.backward().ok());
    ASSERT_TRUE(p.update(step, 0.01f).ok());
  }
  const double first = (losses[0] + losses[1] + losses[2]) / 3, last = (losses[37] + losses[38] + losses[39]) / 3;
  EXPECT_LT(last, 0.4 * first) << "loss went from " << first << " to " << last;

  // The last batch of an epoch gets its own bf16 plan.
  Example small = separable_batch(10, {8, 8, 1}, rng), small_out;
  const Status f = p.forward(small, small_out, true, 77);
  ASSERT_TRUE(f.ok()) << f.message;
  EXPECT_EQ(small_out.find("fc")->shape[0], 10);
  EXPECT_GE(*static_cast<const int32_t*>(small_out.find("correct")->data), 8) << "it learned the problem";
  ASSERT_TRUE(p.backward().ok());

  Example parameters = p.state("parameters"), gradients = p.state("gradients"), slots = p.state("optimizer");
  EXPECT_EQ(parameters.entries.size(), 4u);
  EXPECT_EQ(gradients.entries.size(), 4u);
  EXPECT_EQ(slots.entries.size(), 8u);  // adam: m and v
  expect_float32_state(parameters, g, "parameters");
  expect_float32_state(gradients, g, "gradients");
  expect_float32_state(slots, g, "optimizer");
  // One more Adam step of about 1e-6 per weight, far below a bf16 rounding step of a weight near 0.3 (about 1e-3):
  // float32 masters record it, bf16 ones would not.
  Example batch = separable_batch(32, {8, 8, 1}, rng), out;
  ASSERT_TRUE(p.forward(batch, out, true, 41).ok());
  ASSERT_TRUE(p.backward().ok());
  ASSERT_TRUE(p.update(41, 1e-6f).ok());
  Example nudged = p.state("parameters");
  const auto before = values(parameters, "fc/kernel"), after = values(nudged, "fc/kernel");
  size_t moved = 0;
  for (size_t i = 0; i < before.size(); ++i) moved += after[i] != before[i] && std::fabs(after[i] - before[i]) < 1e-5f;
  EXPECT_GT(moved, before.size() / 2) << "the float32 masters should take steps finer than bf16 can express";
}

TEST(OnednnBf16Training, UpdatedWeightsReachTheBf16CopiesBeforeTheNextForward) {
  // After an optimizer step, a bf16 forward must use the new float32 masters: a float32 program given those
  // masters computes (nearly) the same outputs.
  const json g = bf16_cnn();
  Harness bf16, f32;
  const Status s = bf16.compile(g, options("mixed_bfloat16", 16));
  SKIP_WITHOUT_BF16_CPU(s);
  ASSERT_TRUE(s.ok()) << s.message;
  ASSERT_TRUE(f32.compile(g, options("float32", 16)).ok());
  Example params = fan_in_params(g, 8);
  ASSERT_TRUE(bf16.set_state("parameters", params).ok());
  std::mt19937 rng(5);
  Example batch = separable_batch(16, {8, 8, 1}, rng), out;
  for (int step = 1; step <= 3; ++step) {
    ASSERT_TRUE(bf16.forward(batch, out, true).ok());
    ASSERT_TRUE(bf16.backward().ok());
    ASSERT_TRUE(bf16.update(step, 0.5f).ok());  // large steps: stale copies would be far off
  }
  Example masters = bf16.state("parameters"), got, want;
  ASSERT_TRUE(f32.set_state("parameters", masters).ok());
  ASSERT_TRUE(bf16.forward(batch, got, false).ok());
  ASSERT_TRUE(f32.forward(batch, want, false).ok());
  EXPECT_LT(relative_error(values(got, "fc"), values(want, "fc")), kOutputTolerance);
}

// ---- options ----------------------------------------------------------------------------------------------

TEST(OnednnBf16Options, MixedFloat16AndPureBfloat16AreRefused) {
  for (const char* precision : {"mixed_float16", "bfloat16", "float64"}) {
    Harness p;
    const Status s = p.compile(bf16_cnn(), options(precision, 4));
    EXPECT_EQ(s.code, RAMJET_ERR_UNSUPPORTED) << precision;
    EXPECT_NE(s.message.find(precision), std::string::npos) << s.message;
  }
  Harness p;
  const Status s = p.compile(bf16_cnn(), options("mixed_float16", 4));
  EXPECT_NE(s.message.find("GPU"), std::string::npos) << "say where float16 runs: " << s.message;
}

// ---- the precision_policy component -----------------------------------------------------------------------

namespace {

PluginRegistry& registry() {
  static PluginRegistry r{DiscoveryOptions{{ramjet::test::stock_plugin_dir()}, {}, {}}};
  return r;
}

class Policy {
 public:
  Policy() {
    CreateArgs args;
    args.config = json::object();
    args.where = "test#/train/precision";
    policy_.emplace(registry().component(RAMJET_KIND_PRECISION_POLICY, "mixed_bfloat16"), args);
  }
  const ramjet_precision_policy_vtable& vt() const { return policy_->table(); }
  void* self() const { return policy_->self(); }

  // (compute, variable) for one layer's JSON.
  std::pair<DLDataType, DLDataType> dtypes(const json& layer, Status* status = nullptr) const {
    ramjet_layer_dtypes out{};
    out.struct_size = sizeof out;
    const std::string text = layer.dump();
    const Status s = call([&](ramjet_error* e) { return vt().layer_dtypes(self(), text.c_str(), &out, e); });
    if (status != nullptr) *status = s;
    else EXPECT_TRUE(s.ok()) << s.message;
    return {out.compute, out.variable};
  }

 private:
  std::optional<Instance<ramjet_precision_policy_vtable>> policy_;
};

bool same(std::pair<DLDataType, DLDataType> got, DLDataType compute, DLDataType variable) {
  return same_dtype(got.first, compute) && same_dtype(got.second, variable);
}

}  // namespace

TEST(OnednnBf16Policy, ComputeLayersInBf16OverFloat32Variables) {
  Policy policy;
  for (const char* op : {"conv2d", "dense", "max_pool", "avg_pool", "global_avg_pool", "activation", "add", "concat",
                         "dropout", "flatten"})
    EXPECT_TRUE(same(policy.dtypes({{"name", "n"}, {"op", op}, {"attrs", {{"activation", "relu"}}}}), kBF16, kF32)) << op;
  // A model-section layer names its op "type".
  EXPECT_TRUE(same(policy.dtypes({{"type", "conv2d"}, {"filters", 8}}), kBF16, kF32));
}

TEST(OnednnBf16Policy, SoftmaxBatchNormAndLossesStayFloat32) {
  Policy policy;
  for (const char* op : {"softmax", "batch_norm", "sparse_softmax_cross_entropy", "mse", "l1"})
    EXPECT_TRUE(same(policy.dtypes({{"name", "n"}, {"op", op}}), kF32, kF32)) << op;
  EXPECT_TRUE(same(policy.dtypes({{"op", "activation"}, {"attrs", {{"activation", "softmax"}}}}), kF32, kF32));
  EXPECT_TRUE(same(policy.dtypes({{"type", "activation"}, {"activation", "softmax"}}), kF32, kF32));

  Status s;
  policy.dtypes({{"name", "odd"}, {"attrs", json::object()}}, &s);
  EXPECT_EQ(s.code, RAMJET_ERR_INVALID_ARGUMENT);
  EXPECT_NE(s.message.find("odd"), std::string::npos) << s.message;
}

TEST(OnednnBf16Policy, NoLossScalingNoSkippedStepsNoState) {
  Policy policy;
  float scale = 0;
  ASSERT_TRUE(call([&](ramjet_error* e) { return policy.vt().loss_scale(policy.self(), &scale, e); }).ok());
  EXPECT_EQ(scale, 1.0f);
  for (int32_t nonfinite : {0, 1}) {
    int32_t skip = -1;
    ASSERT_TRUE(call([&](ramjet_error* e) { return policy.vt().update(policy.self(), nonfinite, &skip, e); }).ok());
    EXPECT_EQ(skip, 0) << "found_nonfinite " << nonfinite;
  }
  ASSERT_NE(policy.vt().save_state, nullptr);
  ramjet_buffer buffer;
  buffer.bytes = "stale";
  ASSERT_TRUE(call([&](ramjet_error* e) { return policy.vt().save_state(policy.self(), &buffer, e); }).ok());
  EXPECT_TRUE(buffer.bytes.empty());
  ASSERT_NE(policy.vt().restore_state, nullptr);
  EXPECT_TRUE(call([&](ramjet_error* e) { return policy.vt().restore_state(policy.self(), "", 0, e); }).ok());
  const Status s = call([&](ramjet_error* e) { return policy.vt().restore_state(policy.self(), "x", 1, e); });
  EXPECT_EQ(s.code, RAMJET_ERR_INVALID_ARGUMENT) << "another policy's loss-scaler state is not silently dropped";
}
