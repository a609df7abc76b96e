// The model section becomes a graph IR: Keras's shape rules, names and parameter counts, DAGs through named
// inputs, clear errors at the offending layer's JSON pointer, and seeded initialisation.
#include "ramjet/plugin/failure.hpp"
#include "ramjet/model/graph.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace ramjet::core;
using namespace ramjet::test;

namespace {

class GraphTest : public ::testing::Test {
 protected:
  TempDir dir;
  Graph build(const nlohmann::json& model) {
    write_file(dir / "m.json", nlohmann::json{{"model", model}}.dump());
    return build_graph(model, Origin{dir / "m.json"});
  }
  // The error for a model that must be refused: "<file>#<pointer>: <message>".
  std::string error(const nlohmann::json& model) {
    try {
      build(model);
    } catch (const ManifestError& e) {
      return e.pointer + ": " + e.message;
    }
    return "no error";
  }
  static nlohmann::json keras_cnn() {
    return {{"input", {{"image", {28, 28, 1}}}},
            {"layers",
             {{{"type", "conv2d"}, {"filters", 32}, {"kernel", 3}, {"activation", "relu"}},
              {{"type", "max_pool"}, {"pool", 2}},
              {{"type", "conv2d"}, {"filters", 64}, {"kernel", 3}, {"activation", "relu"}},
              {{"type", "max_pool"}, {"pool", 2}},
              {{"type", "flatten"}},
              {{"type", "dense"}, {"units", 128}, {"activation", "relu"}},
              {{"type", "dense"}, {"units", 10}}}},
            {"loss", {{"type", "sparse_softmax_cross_entropy"}}}};
  }
  static std::vector<int64_t> shape_of(const Graph& g, const std::string& node) {
    for (const auto& n : g.ir["nodes"])
      if (n["name"] == node) return n["shape"].get<std::vector<int64_t>>();
    return {};
  }
  static nlohmann::json node(const Graph& g, const std::string& name) {
    for (const auto& n : g.ir["nodes"])
      if (n["name"] == name) return n;
    return nullptr;
  }
};

}  // namespace

TEST_F(GraphTest, KerasTutorialCnnHasKerasShapesNamesAndParameterCount) {
  Graph g = build(keras_cnn());
  EXPECT_EQ(g.parameter_count, 225034);  // what Keras's model.summary() reports for this model
  EXPECT_EQ(shape_of(g, "conv2d"), (std::vector<int64_t>{26, 26, 32}));
  EXPECT_EQ(shape_of(g, "max_pool_1"), (std::vector<int64_t>{5, 5, 64}));
  EXPECT_EQ(shape_of(g, "flatten"), (std::vector<int64_t>{1600}));
  EXPECT_EQ(g.ir["outputs"], nlohmann::json{"dense_1"});
  EXPECT_EQ(g.ir["params"]["conv2d_1/kernel"]["shape"], (nlohmann::json{3, 3, 32, 64}));  // HWIO
  EXPECT_EQ(g.ir["params"]["dense/kernel"]["shape"], (nlohmann::json{1600, 128}));
  EXPECT_EQ(g.ir["loss"]["op"], "sparse_softmax_cross_entropy");
  EXPECT_EQ(g.ir["labels"]["dtype"], "int32");
  EXPECT_NE(graph_summary(g).find("total parameters: 225034"), std::string::npos);
}

TEST_F(GraphTest, SamePaddingStridesAndDilationFollowKeras) {
  Graph g = build({{"input", {{"x", {28, 28, 3}}}},
                   {"layers",
                    {{{"type", "conv2d"}, {"filters", 8}, {"kernel", 3}, {"strides", 2}, {"padding", "same"}},
                     {{"type", "conv2d"}, {"filters", 8}, {"kernel", 3}, {"dilation", 2}},
                     {{"type", "avg_pool"}, {"pool", 3}, {"strides", 2}, {"padding", "same"}}}}});
  EXPECT_EQ(shape_of(g, "conv2d"), (std::vector<int64_t>{14, 14, 8}));
  EXPECT_EQ(node(g, "conv2d")["attrs"]["padding"], (nlohmann::json{0, 1, 0, 1}));  // Keras puts the odd pixel last
  EXPECT_EQ(shape_of(g, "conv2d_1"), (std::vector<int64_t>{10, 10, 8}));           // 14 - (3-1)*2
  EXPECT_EQ(shape_of(g, "avg_pool"), (std::vector<int64_t>{5, 5, 8}));
}

TEST_F(GraphTest, DepthwiseAndGroupedConvolutionsSplitChannels) {
  Graph g = build({{"input", {{"x", {8, 8, 6}}}},
                   {"layers",
                    {{{"type", "depthwise_conv2d"}, {"kernel", 3}, {"depth_multiplier", 2}},
                     {{"type", "conv2d"}, {"filters", 12}, {"kernel", 1}, {"groups", 3}}}}});
  EXPECT_EQ(node(g, "depthwise_conv2d")["attrs"]["groups"], 6);
  EXPECT_EQ(g.ir["params"]["depthwise_conv2d/kernel"]["shape"], (nlohmann::json{3, 3, 1, 12}));
  EXPECT_EQ(g.ir["params"]["conv2d/kernel"]["shape"], (nlohmann::json{1, 1, 4, 12}));
}

TEST_F(GraphTest, ResidualBlocksAreADagThroughNamedInputs) {
  Graph g = build({{"input", {{"x", {8, 8, 4}}}},
                   {"layers",
                    {{{"type", "conv2d"}, {"name", "a"}, {"filters", 4}, {"kernel", 3}, {"padding", "same"}},
                     {{"type", "batch_norm"}},
                     {{"type", "relu"}, {"name", "r"}},
                     {{"type", "add"}, {"inputs", {"x", "r"}}},
                     {{"type", "concat"}, {"inputs", {"add", "a"}}},
                     {{"type", "global_avg_pool"}},
                     {{"type", "dropout"}, {"rate", 0.25}},
                     {{"type", "dense"}, {"units", 3}},
                     {{"type", "softmax"}}}},
                   {"loss", {{"type", "mse"}, {"labels", "target"}}}});
  EXPECT_EQ(node(g, "add")["inputs"], (nlohmann::json{"x", "r"}));
  EXPECT_EQ(shape_of(g, "concat"), (std::vector<int64_t>{8, 8, 8}));
  EXPECT_EQ(node(g, "r")["op"], "activation");
  EXPECT_TRUE(g.ir["params"].contains("batch_norm/moving_variance"));
  EXPECT_EQ(g.ir["labels"], (nlohmann::json{{"name", "target"}, {"dtype", "float32"}, {"shape", {3}}}));
}

TEST_F(GraphTest, ErrorsNameTheLayerPointerAndTheProblem) {
  auto model = keras_cnn();
  model["layers"].erase(4);  // no flatten before dense: Keras's Dense works on the last axis, and so does this one
  EXPECT_EQ(build(model).ir["labels"]["shape"], (nlohmann::json{5, 5}));  // a class per position
  model = keras_cnn();
  model["layers"][0] = {{"type", "embedding"}, {"input_dim", 10}, {"output_dim", 4}};
  EXPECT_EQ(error(model), "/model/layers/0: layer 'embedding': embedding reads int32 token IDs, but 'image' is float32");
  model = keras_cnn();
  model["input"]["second"] = {4};
  EXPECT_EQ(error(model), "/model/layers/0/inputs: the model has several inputs: name the one this layer reads");
  model = keras_cnn();
  model["layers"][0]["filter"] = 3;
  EXPECT_NE(error(model).find("/model/layers/0/filter: unknown field 'filter' for a conv2d layer (did you mean 'filters'?)"),
            std::string::npos);
  model = keras_cnn();
  model["layers"][2]["kernel"] = 30;
  EXPECT_NE(error(model).find("/model/layers/2: layer 'conv2d_1': the 30x30 kernel does not fit the input [13, 13, 32]"),
            std::string::npos);
  model = keras_cnn();
  model["layers"][1] = {{"type", "maxpool"}};
  EXPECT_NE(error(model).find("/model/layers/1/type: unknown layer type 'maxpool' (did you mean 'max_pool'?)"),
            std::string::npos);
  model = keras_cnn();
  model["layers"][5]["inputs"] = "nowhere";
  EXPECT_EQ(error(model), "/model/layers/5/inputs: no earlier layer or input is named 'nowhere'");
  model = keras_cnn();
  model["layers"][6]["activation"] = "swish2";
  EXPECT_NE(error(model).find("/model/layers/6/activation: unknown activation 'swish2'"), std::string::npos);
  EXPECT_NE(error({{"input", {{"x", {4, 4, 2}}}},
                   {"layers", {{{"type", "conv2d"}, {"filters", 3}, {"kernel", 1}}, {{"type", "add"}, {"inputs", {"x", "conv2d"}}}}}})
                .find("add needs equal shapes: 'x' is [4, 4, 2], 'conv2d' is [4, 4, 3]"),
            std::string::npos);
  model = keras_cnn();
  model["loss"]["label_smoothing"] = 1.5;
  EXPECT_EQ(error(model), "/model/loss/label_smoothing: must be a number in [0, 1), got 1.5");
  model = keras_cnn();
  model["loss"]["typo"] = 1;
  EXPECT_NE(error(model).find("/model/loss/typo: unknown field 'typo' for a sparse_softmax_cross_entropy loss (did you "
                              "mean 'type'?)"),
            std::string::npos);
}

TEST_F(GraphTest, InitialParametersAreSeededAndFollowKerasInitializers) {
  Graph g = build(keras_cnn());
  Example a = initial_parameters(g.ir, 42), b = initial_parameters(g.ir, 42), c = initial_parameters(g.ir, 43);
  auto values = [](Example& e, const char* name) {
    const DLTensor* t = e.find(name);
    const float* v = static_cast<const float*>(t->data);
    return std::vector<float>(v, v + element_count(*t));
  };
  EXPECT_EQ(values(a, "dense/kernel"), values(b, "dense/kernel"));
  EXPECT_NE(values(a, "dense/kernel"), values(c, "dense/kernel"));
  for (float v : values(a, "dense/bias")) EXPECT_EQ(v, 0.0f);
  // glorot_uniform for dense/kernel [1600, 128]: uniform within sqrt(6 / (1600 + 128)), variance limit^2 / 3.
  const double limit = std::sqrt(6.0 / (1600 + 128));
  double sum = 0, sum2 = 0;
  auto k = values(a, "dense/kernel");
  for (float v : k) {
    EXPECT_LE(std::fabs(v), limit);
    sum += v;
    sum2 += static_cast<double>(v) * v;
  }
  const double mean = sum / static_cast<double>(k.size());
  EXPECT_NEAR(mean, 0.0, 0.01 * limit);
  EXPECT_NEAR(sum2 / static_cast<double>(k.size()), limit * limit / 3, 0.02 * limit * limit);
  // he_normal (truncated, rescaled): variance 2 / fan_in.
  auto model = keras_cnn();
  model["layers"][5]["kernel_initializer"] = "he_normal";
  Example h = initial_parameters(build(model).ir, 1);
  auto hv = values(h, "dense/kernel");
  double s2 = 0;
  for (float v : hv) s2 += static_cast<double>(v) * v;
  EXPECT_NEAR(s2 / static_cast<double>(hv.size()), 2.0 / 1600, 0.1 * 2.0 / 1600);
}

TEST_F(GraphTest, ZeroPaddingCroppingAndDepthToSpaceFollowKeras) {
  Graph g = build({{"input", {{"x", {6, 5, 8}}}},
                   {"layers",
                    {{{"type", "zero_padding2d"}, {"name", "p1"}, {"inputs", "x"}},  // Keras's default: one of each
                     {{"type", "zero_padding2d"}, {"name", "p2"}, {"inputs", "x"}, {"padding", {2, 0}}},
                     {{"type", "zero_padding2d"}, {"name", "p3"}, {"inputs", "x"}, {"padding", {{1, 2}, {0, 3}}}},
                     {{"type", "cropping2d"}, {"name", "c1"}, {"inputs", "x"}, {"cropping", 1}},
                     {{"type", "cropping2d"}, {"name", "c2"}, {"inputs", "x"}, {"cropping", {{0, 2}, {1, 3}}}},
                     {{"type", "depth_to_space"}, {"name", "d"}, {"inputs", "x"}, {"block_size", 2}}}}});
  EXPECT_EQ(shape_of(g, "p1"), (std::vector<int64_t>{8, 7, 8}));
  EXPECT_EQ(node(g, "p1")["attrs"]["padding"], (nlohmann::json{1, 1, 1, 1}));
  EXPECT_EQ(shape_of(g, "p2"), (std::vector<int64_t>{10, 5, 8}));
  EXPECT_EQ(node(g, "p2")["attrs"]["padding"], (nlohmann::json{2, 2, 0, 0}));
  EXPECT_EQ(shape_of(g, "p3"), (std::vector<int64_t>{9, 8, 8}));
  EXPECT_EQ(node(g, "p3")["attrs"]["padding"], (nlohmann::json{1, 2, 0, 3}));
  EXPECT_EQ(shape_of(g, "c1"), (std::vector<int64_t>{4, 3, 8}));
  EXPECT_EQ(shape_of(g, "c2"), (std::vector<int64_t>{4, 1, 8}));
  EXPECT_EQ(node(g, "c2")["attrs"]["cropping"], (nlohmann::json{0, 2, 1, 3}));
  EXPECT_EQ(shape_of(g, "d"), (std::vector<int64_t>{12, 10, 2}));
  EXPECT_EQ(node(g, "d")["attrs"]["block_size"], 2);
  EXPECT_EQ(g.parameter_count, 0);
}

TEST_F(GraphTest, ShapeLayersRefuseWrongRanksAndFields) {
  auto one = [](nlohmann::json layer, std::vector<int64_t> input = {6, 5, 8}) {
    return nlohmann::json{{"input", {{"x", input}}}, {"layers", {layer}}};
  };
  EXPECT_EQ(error(one({{"type", "zero_padding2d"}}, {10, 8})),
            "/model/layers/0: layer 'zero_padding2d': zero_padding2d needs an [H, W, C] input, got [10, 8]");
  EXPECT_EQ(error(one({{"type", "cropping2d"}}, {40})), "/model/layers/0: layer 'cropping2d': cropping2d needs an [H, W, C] input, got [40]");
  EXPECT_EQ(error(one({{"type", "depth_to_space"}, {"block_size", 2}}, {4, 8})),
            "/model/layers/0: layer 'depth_to_space': depth_to_space needs an [H, W, C] input, got [4, 8]");
  EXPECT_NE(error(one({{"type", "zero_padding2d"}, {"padding", -1}})).find("/model/layers/0/padding: must be an integer, "
                                                                         "[rows, columns] or [[top, bottom], [left, right]]"),
            std::string::npos);
  EXPECT_NE(error(one({{"type", "zero_padding2d"}, {"padding", {1, 2, 3}}})).find("/model/layers/0/padding: must be"),
            std::string::npos);
  EXPECT_NE(error(one({{"type", "zero_padding2d"}, {"padding", "same"}})).find("/model/layers/0/padding: must be"),
            std::string::npos);
  EXPECT_EQ(error(one({{"type", "cropping2d"}, {"cropping", {{3, 3}, {0, 0}}}})),
            "/model/layers/0/cropping: removes every row or column of the input [6, 5, 8] (top 3, bottom 3, left 0, "
            "right 0)");
  EXPECT_NE(error(one({{"type", "cropping2d"}, {"cropping", {{1, 1}, {1, -1}}}})).find("/model/layers/0/cropping: must be"),
            std::string::npos);
  EXPECT_EQ(error(one({{"type", "depth_to_space"}})), "/model/layers/0/block_size: required field is missing");
  EXPECT_EQ(error(one({{"type", "depth_to_space"}, {"block_size", 1}})), "/model/layers/0/block_size: must be at least 2");
  EXPECT_EQ(error(one({{"type", "depth_to_space"}, {"block_size", 3}})),
            "/model/layers/0/block_size: the input's 8 channels are not a multiple of 3x3 = 9");
  EXPECT_EQ(error(one({{"type", "cropping2d"}, {"padding", 1}})),
            "/model/layers/0/padding: unknown field 'padding' for a cropping2d layer; expected cropping, type, name, inputs");
}

TEST_F(GraphTest, ConcatJoinsAnyAxisAsKerasCountsThem) {
  auto model = [](nlohmann::json axis) {
    nlohmann::json cat = {{"type", "concat"}, {"inputs", {"a", "b"}}};
    if (!axis.is_null()) cat["axis"] = axis;
    return nlohmann::json{{"input", {{"a", {4, 5, 3}}, {"b", {4, 5, 3}}}}, {"layers", {cat}}};
  };
  const std::vector<std::pair<nlohmann::json, std::vector<int64_t>>> cases = {
      {nullptr, {4, 5, 6}}, {-1, {4, 5, 6}}, {3, {4, 5, 6}}, {1, {8, 5, 3}},
      {-3, {8, 5, 3}},      {2, {4, 10, 3}}, {-2, {4, 10, 3}}};
  for (const auto& [axis, shape] : cases) {
    SCOPED_TRACE(axis.dump());
    Graph g = build(model(axis));
    EXPECT_EQ(shape_of(g, "concat"), shape);
    const int64_t from_end = shape == std::vector<int64_t>{4, 5, 6} ? -1 : (shape[0] == 8 ? -3 : -2);
    EXPECT_EQ(node(g, "concat")["attrs"]["axis"], from_end);  // counted from the end in the IR
  }
  // Inputs that differ only on the joined axis.
  Graph g = build({{"input", {{"a", {4, 5, 3}}, {"b", {2, 5, 3}}}},
                   {"layers", {{{"type", "concat"}, {"inputs", {"a", "b"}}, {"axis", 1}}}}});
  EXPECT_EQ(shape_of(g, "concat"), (std::vector<int64_t>{6, 5, 3}));

  EXPECT_EQ(error(model(0)),
            "/model/layers/0/axis: names the batch axis: concat joins the axes of each example (1 to 3, or -1 for the last)");
  EXPECT_EQ(error(model(-4)),
            "/model/layers/0/axis: names the batch axis: concat joins the axes of each example (1 to 3, or -1 for the last)");
  EXPECT_EQ(error(model(4)), "/model/layers/0/axis: must be an integer from -3 to 3 for the input [4, 5, 3] (Keras counts "
                             "the batch axis as 0), got 4");
  EXPECT_NE(error(model("x")).find("/model/layers/0/axis: must be an integer"), std::string::npos);
  EXPECT_EQ(error({{"input", {{"a", {4, 5, 3}}, {"b", {2, 5, 3}}}},
                   {"layers", {{{"type", "concat"}, {"inputs", {"a", "b"}}}}}}),
            "/model/layers/0/inputs: concat on axis 3 needs the other axes to match: 'a' is [4, 5, 3], 'b' is [2, 5, 3]");
  EXPECT_EQ(error({{"input", {{"a", {4, 5, 3}}, {"b", {4, 5}}}},
                   {"layers", {{{"type", "concat"}, {"inputs", {"a", "b"}}, {"axis", 1}}}}}),
            "/model/layers/0/inputs: concat on axis 1 needs the other axes to match: 'a' is [4, 5, 3], 'b' is [4, 5]");
}
