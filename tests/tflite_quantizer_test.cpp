// The int8 quantizer (plugin tflite) through the C ABI: calibrated ranges (min-max, percentile, MSE), activation,
// weight and bias parameters per the TFLite 8-bit spec, the rewrites (dropout, relu fusion, batch-norm folding),
// dynamic range, and errors that name the node or tensor.
#include "ramjet/plugin/components.hpp"
#include "ramjet/plugin/example.hpp"
#include "ramjet/plugin/host_api.hpp"
#include "ramjet/plugin/tensor.hpp"
#include "quantizer_calls.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>

using namespace ramjet::core;
using nlohmann::json;
using Shape = std::vector<int64_t>;
using ramjet::test::QuantizerInstance;
using ramjet::test::Status;
using ramjet::test::values_of;

namespace {

constexpr DLDataType kF32{kDLFloat, 32, 1};

// One int8 quantizer loaded from the build tree's plugin directory.
class Quantizer {
 public:
  explicit Quantizer(const json& config = json::object()) {
    CreateArgs args;
    args.config = config;
    args.where = "test.json#/export/quantizer";
    instance_.emplace(registry_.component(RAMJET_KIND_QUANTIZER, "int8"), args);
  }
  Status observe(const std::string& name, const std::vector<float>& values) {
    return ramjet::test::observe(*instance_, name, values);
  }
  Status quantize(const json& graph, Example& params, json& qgraph, Example& qparams) {
    return ramjet::test::quantize(*instance_, graph, params, qgraph, qparams);
  }

 private:
  PluginRegistry registry_{DiscoveryOptions{{ramjet::test::stock_plugin_dir()}, {}, {}}};
  std::optional<QuantizerInstance> instance_;
};

void put(Example& e, const std::string& name, const Shape& shape, const std::vector<float>& values) {
  TensorPtr t = make_tensor(kF32, shape);
  std::copy(values.begin(), values.end(), static_cast<float*>(t->dl_tensor.data));
  e.set(name, std::move(t));
}

std::vector<float> ramp(size_t n, float lo, float hi) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = lo + (hi - lo) * static_cast<float>(i) / static_cast<float>(n - 1);
  return v;
}

json param_spec(const Shape& shape) { return {{"shape", shape}, {"init", "zeros"}, {"fan_in", 0}, {"fan_out", 0}}; }

json dense_node(const std::string& name, const std::string& input, int64_t units, bool bias = true,
                const std::string& activation = "linear") {
  json node = {{"name", name}, {"op", "dense"}, {"inputs", {input}}, {"shape", {units}},
               {"attrs", {{"units", units}, {"use_bias", bias}, {"activation", activation}}},
               {"params", {{"kernel", name + "/kernel"}}}};
  if (bias) node["params"]["bias"] = name + "/bias";
  return node;
}

json conv_node(const std::string& name, const std::string& input, const Shape& out, int64_t k,
               const std::string& activation = "linear") {
  return {{"name", name}, {"op", "conv2d"}, {"inputs", {input}}, {"shape", out},
          {"attrs", {{"filters", out[2]}, {"kernel", {k, k}}, {"strides", {1, 1}}, {"padding", {0, 0, 0, 0}},
                     {"dilation", {1, 1}}, {"groups", 1}, {"use_bias", true}, {"activation", activation}}},
          {"params", {{"kernel", name + "/kernel"}, {"bias", name + "/bias"}}}};
}

// x [4] → dense [2]
json dense_graph(bool bias = true) {
  json g = {{"inputs", {{{"name", "x"}, {"shape", {4}}, {"dtype", "float32"}}}},
            {"nodes", {dense_node("dense", "x", 2, bias)}},
            {"outputs", {"dense"}},
            {"params", {{"dense/kernel", param_spec({4, 2})}}}};
  if (bias) g["params"]["dense/bias"] = param_spec({2});
  return g;
}

Example dense_params(bool bias = true) {
  Example p;
  put(p, "dense/kernel", {4, 2}, {0.5f, -1.0f, 0.25f, 0.5f, -0.127f, 0.75f, 1.27f, -0.3f});
  if (bias) put(p, "dense/bias", {2}, {0.1f, -0.2f});
  return p;
}

float range_of(const json& entry) { return entry.at("scale")[0].get<float>() * 255.0f; }

// ---- ranges and activation parameters ---------------------------------------------------------------------

TEST(TfliteQuantizer, MinMaxRangeIsWidenedToIncludeZero) {
  Quantizer q;
  ASSERT_TRUE(q.observe("x", {0.2f, 0.5f, 0.8f, 0.3f}).ok());
  ASSERT_TRUE(q.observe("x", {0.4f, 0.6f, 0.7f, 0.25f}).ok());
  ASSERT_TRUE(q.observe("dense", {-3.0f, -1.5f}).ok());
  ASSERT_TRUE(q.observe("dense", {-1.0f, -2.0f}).ok());
  Example params = dense_params(), qparams;
  json qg;
  const Status s = q.quantize(dense_graph(), params, qg, qparams);
  ASSERT_TRUE(s.ok()) << s.message;
  const json& t = qg["quantization"]["tensors"];
  // [0.2, 0.8] → [0, 0.8]: zero at -128.
  EXPECT_FLOAT_EQ(t["x"]["scale"][0].get<float>(), 0.8f / 255.0f);
  EXPECT_EQ(t["x"]["zero_point"][0], -128);
  EXPECT_EQ(t["x"]["dtype"], "int8");
  // [-3, -1] → [-3, 0]: zero at 127.
  EXPECT_FLOAT_EQ(t["dense"]["scale"][0].get<float>(), 3.0f / 255.0f);
  EXPECT_EQ(t["dense"]["zero_point"][0], 127);
  EXPECT_EQ(qg["quantization"]["mode"], "full_integer");
  EXPECT_EQ(qg["mode"], "full_integer");  // at the top level too, for the host
  EXPECT_EQ(qg["quantization"]["calibration"]["method"], "minmax");
  EXPECT_EQ(qg["quantization"]["calibration"]["batches"], 2);
  EXPECT_EQ(qg["quantization"]["version"], 1);
}

TEST(TfliteQuantizer, AsymmetricZeroPointFollowsTheSpecFormula) {
  Quantizer q;
  ASSERT_TRUE(q.observe("x", {-1.0f, 3.0f}).ok());
  ASSERT_TRUE(q.observe("dense", {-0.5f, 0.5f}).ok());
  Example params = dense_params(), qparams;
  json qg;
  ASSERT_TRUE(q.quantize(dense_graph(), params, qg, qparams).ok());
  const float scale = 4.0f / 255.0f;
  EXPECT_FLOAT_EQ(qg["quantization"]["tensors"]["x"]["scale"][0].get<float>(), scale);
  EXPECT_EQ(qg["quantization"]["tensors"]["x"]["zero_point"][0], std::lround(-128.0 + 1.0 / scale));
}

TEST(TfliteQuantizer, PercentileClipsAnOutlier) {
  Quantizer minmax, percentile(json{{"calibration", {{"method", "percentile"}, {"percentile", 99.99}}}});
  std::vector<float> x = ramp(100000, 0.0f, 1.0f);
  x.push_back(50.0f);  // one outlier in 100001 values
  for (Quantizer* q : {&minmax, &percentile}) {
    ASSERT_TRUE(q->observe("x", x).ok());
    ASSERT_TRUE(q->observe("dense", {-1.0f, 1.0f}).ok());
  }
  Example p1 = dense_params(), p2 = dense_params(), out1, out2;
  json g1, g2;
  ASSERT_TRUE(minmax.quantize(dense_graph(), p1, g1, out1).ok());
  const Status s = percentile.quantize(dense_graph(), p2, g2, out2);
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_NEAR(range_of(g1["quantization"]["tensors"]["x"]), 50.0f, 1e-3f);
  const float clipped = range_of(g2["quantization"]["tensors"]["x"]);
  EXPECT_GT(clipped, 0.9f);
  EXPECT_LT(clipped, 1.1f);
  EXPECT_EQ(g2["quantization"]["calibration"]["method"], "percentile");
}

TEST(TfliteQuantizer, MseChoosesANarrowerRangeThanMinMaxOnAHeavyTail) {
  // Laplace samples: exponential tails whose rare extremes cost more rounding noise everywhere than clipping them
  // costs at the ends (at 8 bits the MSE-optimal clip is near 9.9 b, the largest of 200k samples near 12 b).
  Quantizer minmax, mse(json{{"calibration", {{"method", "mse"}}}});
  std::mt19937 rng(42);
  std::exponential_distribution<float> magnitude(1.0f);
  std::bernoulli_distribution negative(0.5);
  for (int batch = 0; batch < 4; ++batch) {
    std::vector<float> x(50000);
    for (float& v : x) v = negative(rng) ? -magnitude(rng) : magnitude(rng);
    for (Quantizer* q : {&minmax, &mse}) ASSERT_TRUE(q->observe("x", x).ok());
  }
  for (Quantizer* q : {&minmax, &mse}) ASSERT_TRUE(q->observe("dense", {-1.0f, 1.0f}).ok());
  Example p1 = dense_params(), p2 = dense_params(), out1, out2;
  json g1, g2;
  ASSERT_TRUE(minmax.quantize(dense_graph(), p1, g1, out1).ok());
  const Status s = mse.quantize(dense_graph(), p2, g2, out2);
  ASSERT_TRUE(s.ok()) << s.message;
  const float full = range_of(g1["quantization"]["tensors"]["x"]);
  const float chosen = range_of(g2["quantization"]["tensors"]["x"]);
  EXPECT_LT(chosen, 0.95f * full) << "minmax " << full << ", mse " << chosen;
  EXPECT_GT(chosen, 0.5f * full) << "minmax " << full << ", mse " << chosen;
  EXPECT_EQ(g2["quantization"]["calibration"]["method"], "mse");
}

// ---- weights, biases, softmax -------------------------------------------------------------------------------

// x [2, 2, 2] → conv2d 1×1 with 3 filters
json conv_graph() {
  return {{"inputs", {{{"name", "x"}, {"shape", {2, 2, 2}}, {"dtype", "float32"}}}},
          {"nodes", {conv_node("conv2d", "x", {2, 2, 3}, 1)}},
          {"outputs", {"conv2d"}},
          {"params", {{"conv2d/kernel", param_spec({1, 1, 2, 3})}, {"conv2d/bias", param_spec({3})}}}};
}

TEST(TfliteQuantizer, ConvWeightsArePerChannelAndBiasScaleIsInputTimesWeight) {
  Quantizer q;
  ASSERT_TRUE(q.observe("x", {0.0f, 2.0f}).ok());
  ASSERT_TRUE(q.observe("conv2d", {-1.0f, 4.0f}).ok());
  const std::vector<float> kernel = {0.5f, -2.0f, 0.0f,  // in 0: out 0, 1, 2
                                     -0.3f, 1.2f, 0.0f};  // in 1
  const std::vector<float> bias = {0.11f, -0.3f, 0.7f};
  Example params, qparams;
  put(params, "conv2d/kernel", {1, 1, 2, 3}, kernel);
  put(params, "conv2d/bias", {3}, bias);
  json qg;
  const Status s = q.quantize(conv_graph(), params, qg, qparams);
  ASSERT_TRUE(s.ok()) << s.message;
  const json& k = qg["quantization"]["tensors"]["conv2d/kernel"];
  EXPECT_EQ(k["dtype"], "int8");
  EXPECT_EQ(k["axis"], 3);
  const std::vector<float> expected_scales = {0.5f / 127.0f, 2.0f / 127.0f, 1.0f / 127.0f};  // a zero channel: 1/127
  ASSERT_EQ(k["scale"].size(), 3u);
  for (size_t c = 0; c < 3; ++c) {
    EXPECT_FLOAT_EQ(k["scale"][c].get<float>(), expected_scales[c]) << c;
    EXPECT_EQ(k["zero_point"][c], 0);
  }
  const auto q_kernel = values_of<int8_t>(qparams, "conv2d/kernel");
  const std::vector<int8_t> expected_kernel = {127, -127, 0, -76, 76, 0};  // -0.3 / (0.5/127) = -76.2
  EXPECT_EQ(q_kernel, expected_kernel);
  EXPECT_EQ(qg["params"]["conv2d/kernel"]["dtype"], "int8");

  const float input_scale = qg["quantization"]["tensors"]["x"]["scale"][0].get<float>();
  EXPECT_FLOAT_EQ(input_scale, 2.0f / 255.0f);
  const json& b = qg["quantization"]["tensors"]["conv2d/bias"];
  EXPECT_EQ(b["dtype"], "int32");
  EXPECT_EQ(b["axis"], 0);
  const auto q_bias = values_of<int32_t>(qparams, "conv2d/bias");
  ASSERT_EQ(q_bias.size(), 3u);
  for (size_t c = 0; c < 3; ++c) {
    const float scale = input_scale * expected_scales[c];
    EXPECT_FLOAT_EQ(b["scale"][c].get<float>(), scale);
    EXPECT_EQ(q_bias[c], std::lround(static_cast<double>(bias[c]) / scale)) << c;
  }
  EXPECT_EQ(qg["params"]["conv2d/bias"]["dtype"], "int32");
}

TEST(TfliteQuantizer, DenseWeightsArePerTensor) {
  Quantizer q;
  ASSERT_TRUE(q.observe("x", {0.0f, 1.0f}).ok());
  ASSERT_TRUE(q.observe("dense", {-1.0f, 1.0f}).ok());
  Example params = dense_params(), qparams;
  json qg;
  ASSERT_TRUE(q.quantize(dense_graph(), params, qg, qparams).ok());
  const json& k = qg["quantization"]["tensors"]["dense/kernel"];
  ASSERT_EQ(k["scale"].size(), 1u);
  EXPECT_FALSE(k.contains("axis"));
  EXPECT_FLOAT_EQ(k["scale"][0].get<float>(), 1.27f / 127.0f);
  const auto q_kernel = values_of<int8_t>(qparams, "dense/kernel");
  EXPECT_EQ(q_kernel, (std::vector<int8_t>{50, -100, 25, 50, -13, 75, 127, -30}));
  const json& b = qg["quantization"]["tensors"]["dense/bias"];
  ASSERT_EQ(b["scale"].size(), 1u);
  EXPECT_FLOAT_EQ(b["scale"][0].get<float>(), (1.0f / 255.0f) * (1.27f / 127.0f));
}

TEST(TfliteQuantizer, SoftmaxOutputIsOneOver256AtMinus128) {
  json g = dense_graph();
  g["nodes"].push_back({{"name", "softmax"}, {"op", "softmax"}, {"inputs", {"dense"}}, {"shape", {2}}, {"attrs", json::object()}});
  g["outputs"] = {"softmax"};
  Quantizer q;
  ASSERT_TRUE(q.observe("x", {0.0f, 1.0f}).ok());
  ASSERT_TRUE(q.observe("dense", {-4.0f, 4.0f}).ok());
  // softmax itself needs no observation: its parameters are fixed by the spec.
  Example params = dense_params(), qparams;
  json qg;
  const Status s = q.quantize(g, params, qg, qparams);
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_FLOAT_EQ(qg["quantization"]["tensors"]["softmax"]["scale"][0].get<float>(), 1.0f / 256.0f);
  EXPECT_EQ(qg["quantization"]["tensors"]["softmax"]["zero_point"][0], -128);
}

TEST(TfliteQuantizer, ConvOrDenseWithoutBiasGetsAZeroInt32Bias) {
  Quantizer q;
  ASSERT_TRUE(q.observe("x", {0.0f, 1.0f}).ok());
  ASSERT_TRUE(q.observe("dense", {-1.0f, 1.0f}).ok());
  Example params = dense_params(false), qparams;
  json qg;
  const Status s = q.quantize(dense_graph(false), params, qg, qparams);
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_EQ(qg["nodes"][0]["params"]["bias"], "dense/bias");
  EXPECT_EQ(qg["nodes"][0]["attrs"]["use_bias"], true);
  EXPECT_EQ(qg["params"]["dense/bias"]["dtype"], "int32");
  EXPECT_EQ(values_of<int32_t>(qparams, "dense/bias"), (std::vector<int32_t>{0, 0}));
  EXPECT_TRUE(qg["quantization"]["tensors"].contains("dense/bias"));
}

// ---- rewrites ---------------------------------------------------------------------------------------------

TEST(TfliteQuantizer, DropoutIsRemovedReluFusedAndConsumersRewired) {
  // x [2, 2, 1] → conv2d → relu → dropout → flatten → dense
  json g = {{"inputs", {{{"name", "x"}, {"shape", {2, 2, 1}}, {"dtype", "float32"}}}},
            {"nodes",
             {conv_node("conv2d", "x", {2, 2, 2}, 1),
              {{"name", "relu"}, {"op", "activation"}, {"inputs", {"conv2d"}}, {"shape", {2, 2, 2}}, {"attrs", {{"activation", "relu"}}}},
              {{"name", "dropout"}, {"op", "dropout"}, {"inputs", {"relu"}}, {"shape", {2, 2, 2}}, {"attrs", {{"rate", 0.5}}}},
              {{"name", "flatten"}, {"op", "flatten"}, {"inputs", {"dropout"}}, {"shape", {8}}, {"attrs", json::object()}},
              dense_node("dense", "flatten", 2)}},
            {"outputs", {"dense"}},
            {"loss", {{"op", "sparse_softmax_cross_entropy"}, {"input", "dense"}, {"labels", "label"}}},
            {"params", {{"conv2d/kernel", param_spec({1, 1, 1, 2})}, {"conv2d/bias", param_spec({2})},
                        {"dense/kernel", param_spec({8, 2})}, {"dense/bias", param_spec({2})}}}};
  Example params, qparams;
  put(params, "conv2d/kernel", {1, 1, 1, 2}, {1.0f, -1.0f});
  put(params, "conv2d/bias", {2}, {0.0f, 0.0f});
  put(params, "dense/kernel", {8, 2}, ramp(16, -1.0f, 1.0f));
  put(params, "dense/bias", {2}, {0.0f, 0.0f});
  Quantizer q;
  ASSERT_TRUE(q.observe("x", {-5.0f, 6.0f}).ok());
  ASSERT_TRUE(q.observe("conv2d", {-5.0f, 6.0f}).ok());
  ASSERT_TRUE(q.observe("relu", {0.0f, 6.0f}).ok());
  ASSERT_TRUE(q.observe("dropout", {0.0f, 6.0f}).ok());
  ASSERT_TRUE(q.observe("flatten", {0.0f, 6.0f}).ok());
  ASSERT_TRUE(q.observe("dense", {-2.0f, 2.0f}).ok());
  json qg;
  const Status s = q.quantize(g, params, qg, qparams);
  ASSERT_TRUE(s.ok()) << s.message;
  std::vector<std::string> names;
  for (const auto& node : qg["nodes"]) names.push_back(node["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"conv2d", "flatten", "dense"}));
  EXPECT_EQ(qg["nodes"][0]["attrs"]["activation"], "relu");
  EXPECT_EQ(qg["nodes"][1]["inputs"], json({"conv2d"}));
  EXPECT_EQ(qg["outputs"], json({"dense"}));
  const json& t = qg["quantization"]["tensors"];
  // The fused conv takes the relu's range [0, 6], not its own [-5, 6].
  EXPECT_FLOAT_EQ(t["conv2d"]["scale"][0].get<float>(), 6.0f / 255.0f);
  EXPECT_EQ(t["conv2d"]["zero_point"][0], -128);
  EXPECT_EQ(t["flatten"], t["conv2d"]);  // reshapes keep their input's parameters
  EXPECT_FALSE(t.contains("relu"));
  EXPECT_FALSE(t.contains("dropout"));
}

TEST(TfliteQuantizer, ReluIsNotFusedIntoANodeWithOtherReaders) {
  json g = {{"inputs", {{{"name", "x"}, {"shape", {2}}, {"dtype", "float32"}}}},
            {"nodes",
             {dense_node("dense", "x", 2),
              {{"name", "relu"}, {"op", "activation"}, {"inputs", {"dense"}}, {"shape", {2}}, {"attrs", {{"activation", "relu"}}}},
              {{"name", "add"}, {"op", "add"}, {"inputs", {"dense", "relu"}}, {"shape", {2}}, {"attrs", json::object()}}}},
            {"outputs", {"add"}},
            {"params", {{"dense/kernel", param_spec({2, 2})}, {"dense/bias", param_spec({2})}}}};
  Example params, qparams;
  put(params, "dense/kernel", {2, 2}, {1.0f, 0.0f, 0.0f, 1.0f});
  put(params, "dense/bias", {2}, {0.0f, 0.0f});
  Quantizer q;
  for (const char* name : {"x", "dense", "relu", "add"}) ASSERT_TRUE(q.observe(name, {-1.0f, 1.0f}).ok());
  json qg;
  const Status s = q.quantize(g, params, qg, qparams);
  ASSERT_TRUE(s.ok()) << s.message;
  ASSERT_EQ(qg["nodes"].size(), 3u);
  EXPECT_EQ(qg["nodes"][0]["attrs"]["activation"], "linear");
  EXPECT_EQ(qg["nodes"][1]["op"], "activation");
}

TEST(TfliteQuantizer, BatchNormFoldingMatchesConvThenBatchNorm) {
  // x [3, 3, 1] → conv2d 2×2, 2 filters, VALID → batch_norm
  json g = {{"inputs", {{{"name", "x"}, {"shape", {3, 3, 1}}, {"dtype", "float32"}}}},
            {"nodes",
             {conv_node("conv2d", "x", {2, 2, 2}, 2),
              {{"name", "batch_norm"}, {"op", "batch_norm"}, {"inputs", {"conv2d"}}, {"shape", {2, 2, 2}},
               {"attrs", {{"momentum", 0.99}, {"epsilon", 1e-3}}},
               {"params", {{"gamma", "batch_norm/gamma"}, {"beta", "batch_norm/beta"},
                           {"moving_mean", "batch_norm/moving_mean"}, {"moving_variance", "batch_norm/moving_variance"}}}}}},
            {"outputs", {"batch_norm"}},
            {"params", {{"conv2d/kernel", param_spec({2, 2, 1, 2})}, {"conv2d/bias", param_spec({2})},
                        {"batch_norm/gamma", param_spec({2})}, {"batch_norm/beta", param_spec({2})},
                        {"batch_norm/moving_mean", param_spec({2})}, {"batch_norm/moving_variance", param_spec({2})}}}};
  const std::vector<float> kernel = {0.3f, -0.6f, 0.9f, 0.2f, -0.4f, 0.8f, 0.1f, -0.7f};  // [kh][kw][1][2]
  const std::vector<float> bias = {0.05f, -0.1f}, gamma = {1.5f, 0.5f}, beta = {0.2f, -0.3f};
  const std::vector<float> mean = {0.4f, -0.2f}, var = {0.25f, 2.0f};
  const std::vector<float> x = {0.1f, 0.9f, -0.5f, 0.3f, 0.7f, -0.2f, 0.6f, -0.8f, 0.4f};  // [3][3]
  Example params, qparams;
  put(params, "conv2d/kernel", {2, 2, 1, 2}, kernel);
  put(params, "conv2d/bias", {2}, bias);
  put(params, "batch_norm/gamma", {2}, gamma);
  put(params, "batch_norm/beta", {2}, beta);
  put(params, "batch_norm/moving_mean", {2}, mean);
  put(params, "batch_norm/moving_variance", {2}, var);

  // The float reference: conv, then batch norm.
  auto conv_at = [&](const std::vector<float>& k, const std::vector<float>& b, int i, int j, int c) {
    double acc = b[static_cast<size_t>(c)];
    for (int u = 0; u < 2; ++u)
      for (int v = 0; v < 2; ++v) acc += x[static_cast<size_t>((i + u) * 3 + j + v)] * k[static_cast<size_t>((u * 2 + v) * 2 + c)];
    return acc;
  };
  std::vector<double> reference;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int c = 0; c < 2; ++c) {
        const double y = conv_at(kernel, bias, i, j, c);
        reference.push_back(gamma[c] * (y - mean[c]) / std::sqrt(var[c] + 1e-3) + beta[c]);
      }

  Quantizer q;
  ASSERT_TRUE(q.observe("x", x).ok());
  ASSERT_TRUE(q.observe("conv2d", {-9.0f, 9.0f}).ok());
  ASSERT_TRUE(q.observe("batch_norm", {-3.0f, 3.0f}).ok());
  json qg;
  const Status s = q.quantize(g, params, qg, qparams);
  ASSERT_TRUE(s.ok()) << s.message;
  ASSERT_EQ(qg["nodes"].size(), 1u);
  EXPECT_EQ(qg["nodes"][0]["name"], "conv2d");
  EXPECT_EQ(qg["outputs"], json({"conv2d"}));
  EXPECT_FALSE(qg["params"].contains("batch_norm/gamma"));
  EXPECT_EQ(qparams.find("batch_norm/gamma"), nullptr);
  const json& t = qg["quantization"]["tensors"];
  EXPECT_FLOAT_EQ(t["conv2d"]["scale"][0].get<float>(), 6.0f / 255.0f);  // the batch norm's range

  // The folded conv, dequantized, computes conv + batch norm (within the int8 weight and bias rounding).
  const auto qk = values_of<int8_t>(qparams, "conv2d/kernel");
  const auto qb = values_of<int32_t>(qparams, "conv2d/bias");
  std::vector<float> folded_kernel(8), folded_bias(2), ks(2), bs(2);
  for (size_t c = 0; c < 2; ++c) {
    ks[c] = t["conv2d/kernel"]["scale"][c].get<float>();
    bs[c] = t["conv2d/bias"]["scale"][c].get<float>();
    folded_bias[c] = static_cast<float>(qb[c]) * bs[c];
  }
  for (size_t i = 0; i < 8; ++i) folded_kernel[i] = static_cast<float>(qk[i]) * ks[i % 2];
  size_t n = 0;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int c = 0; c < 2; ++c, ++n) {
        const double tolerance = 4 * 0.5 * ks[static_cast<size_t>(c)] * 0.9 + bs[static_cast<size_t>(c)] + 1e-6;
        EXPECT_NEAR(conv_at(folded_kernel, folded_bias, i, j, c), reference[n], tolerance) << i << "," << j << "," << c;
      }
}

// ---- dynamic range ----------------------------------------------------------------------------------------

TEST(TfliteQuantizer, DynamicRangeQuantizesOnlyKernels) {
  Quantizer q(json{{"mode", "dynamic_range"}});
  Example params = dense_params(), qparams;
  json qg;
  const Status s = q.quantize(dense_graph(), params, qg, qparams);  // no calibration needed
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_EQ(qg["quantization"]["mode"], "dynamic_range");
  EXPECT_EQ(qg["mode"], "dynamic_range");
  EXPECT_EQ(qg["quantization"]["input_type"], "float32");
  EXPECT_EQ(qg["quantization"]["output_type"], "float32");
  const json& t = qg["quantization"]["tensors"];
  EXPECT_EQ(t.size(), 1u);
  EXPECT_FLOAT_EQ(t["dense/kernel"]["scale"][0].get<float>(), 1.27f / 127.0f);
  EXPECT_EQ(qparams.find("dense/kernel")->dtype.bits, 8);
  EXPECT_EQ(qg["params"]["dense/bias"]["dtype"], "float32");
  EXPECT_EQ(values_of<float>(qparams, "dense/bias"), (std::vector<float>{0.1f, -0.2f}));
}

// ---- errors -----------------------------------------------------------------------------------------------

TEST(TfliteQuantizer, AnOpWithoutAnInt8FormIsNamed) {
  json g = dense_graph();
  g["nodes"].push_back({{"name", "gelu"}, {"op", "activation"}, {"inputs", {"dense"}}, {"shape", {2}}, {"attrs", {{"activation", "gelu"}}}});
  g["outputs"] = {"gelu"};
  Quantizer q;
  for (const char* name : {"x", "dense", "gelu"}) ASSERT_TRUE(q.observe(name, {-1.0f, 1.0f}).ok());
  Example params = dense_params(), qparams;
  json qg;
  const Status s = q.quantize(g, params, qg, qparams);
  EXPECT_EQ(s.code, RAMJET_ERR_UNSUPPORTED);
  EXPECT_NE(s.message.find("layer 'gelu' (op activation, activation gelu) has no int8 form"), std::string::npos) << s.message;

  json sigmoid = dense_graph();
  sigmoid["nodes"][0]["attrs"]["activation"] = "sigmoid";
  Example params2 = dense_params();
  const Status s2 = q.quantize(sigmoid, params2, qg, qparams);
  EXPECT_EQ(s2.code, RAMJET_ERR_UNSUPPORTED);
  EXPECT_NE(s2.message.find("layer 'dense'"), std::string::npos) << s2.message;
}

TEST(TfliteQuantizer, AnUnobservedTensorAsksForCalibration) {
  Quantizer q;
  ASSERT_TRUE(q.observe("x", {0.0f, 1.0f}).ok());
  Example params = dense_params(), qparams;
  json qg;
  const Status s = q.quantize(dense_graph(), params, qg, qparams);
  EXPECT_EQ(s.code, RAMJET_ERR_INVALID_ARGUMENT);
  EXPECT_NE(s.message.find("tensor 'dense' was never observed: calibrate before quantize"), std::string::npos) << s.message;
}

TEST(TfliteQuantizer, BadConfigurationAndInputsAreRefused) {
  PluginRegistry registry{DiscoveryOptions{{ramjet::test::stock_plugin_dir()}, {}, {}}};
  CreateArgs args;
  args.where = "m.json#/export";
  // The configuration is /export less the core's keys: each refusal names its field under it.
  const std::vector<std::pair<json, std::string>> refused = {
      {{{"calibration", {{"method", "entropy"}}}}, "m.json#/export/calibration/method: must be one of minmax, percentile, mse"},
      {{{"calibration", {{"percentile", 50}}}}, "m.json#/export/calibration/percentile: must be > 50"},
      {{{"mode", "dynamic_range"}, {"output_type", "int8"}},
       "m.json#/export/mode: dynamic_range keeps float32 inputs and outputs; drop input_type/output_type"},
      {{{"method", "minmax"}}, "m.json#/export/method: unknown field 'method'"}};
  for (const auto& [config, message] : refused) {
    args.config = config;
    try {
      QuantizerInstance bad(registry.component(RAMJET_KIND_QUANTIZER, "int8"), args);
      ADD_FAILURE() << config.dump() << " was accepted";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }

  Quantizer q;
  const Shape shape{2};
  TensorPtr ints = make_tensor(DLDataType{kDLInt, 32, 1}, shape);
  QuantizerInstance instance(registry.component(RAMJET_KIND_QUANTIZER, "int8"), CreateArgs{});
  ramjet_error error;
  EXPECT_EQ(instance.table().observe(instance.self(), "x", &ints->dl_tensor, &error), RAMJET_ERR_UNSUPPORTED);
  EXPECT_NE(error.message.find("float32"), std::string::npos) << error.message;

  Example missing, qparams;  // no parameters at all
  json qg;
  ASSERT_TRUE(q.observe("x", {0.0f, 1.0f}).ok());
  const Status s = q.quantize(dense_graph(), missing, qg, qparams);
  EXPECT_NE(s.message.find("parameter 'dense/bias' is missing"), std::string::npos) << s.message;
}

}  // namespace
