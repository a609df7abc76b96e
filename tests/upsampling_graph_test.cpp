// The model section's layers that make images larger become graph IR as Keras shapes them: conv2d_transpose
// (Conv2DTranspose's output sizes, padding and [kh, kw, filters, in] kernel), upsampling2d and resize (one "resize"
// op), with errors at the offending field's JSON pointer.
#include "ramjet/plugin/failure.hpp"
#include "ramjet/model/graph.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

using namespace ramjet::core;
using namespace ramjet::test;

namespace {

class UpsamplingGraphTest : public ::testing::Test {
 protected:
  TempDir dir;
  Graph build(const nlohmann::json& layers, const std::vector<int64_t>& input = {5, 6, 3}) {
    const nlohmann::json model = {{"input", {{"x", input}}}, {"layers", layers}};
    write_file(dir / "m.json", nlohmann::json{{"model", model}}.dump());
    return build_graph(model, Origin{dir / "m.json"});
  }
  std::string error(const nlohmann::json& layers, const std::vector<int64_t>& input = {5, 6, 3}) {
    try {
      build(layers, input);
    } catch (const ManifestError& e) {
      return e.pointer + ": " + e.message;
    }
    return "no error";
  }
  static nlohmann::json node(const Graph& g, const std::string& name) {
    for (const auto& n : g.ir["nodes"])
      if (n["name"] == name) return n;
    return nullptr;
  }
};

}  // namespace

TEST_F(UpsamplingGraphTest, ConvTransposeFollowsKerasOutputSizes) {
  // Keras: valid → in * s + max(k - s, 0); same → in * s; with output_padding → (in - 1) * s + k - 2 * (k // 2) + op.
  Graph g = build({{{"type", "conv2d_transpose"}, {"name", "valid"}, {"filters", 4}, {"kernel", 3}, {"strides", 2},
                    {"inputs", "x"}},
                   {{"type", "conv2d_transpose"}, {"name", "same"}, {"filters", 4}, {"kernel", 3}, {"strides", 2},
                    {"padding", "same"}, {"inputs", "x"}},
                   {{"type", "conv2d_transpose"}, {"name", "small_kernel"}, {"filters", 2}, {"kernel", {1, 2}},
                    {"strides", 3}, {"use_bias", false}, {"inputs", "x"}},
                   {{"type", "conv2d_transpose"}, {"name", "extra"}, {"filters", 2}, {"kernel", 3}, {"strides", 2},
                    {"padding", "same"}, {"output_padding", {1, 0}}, {"activation", "relu"}, {"inputs", "x"}}});
  EXPECT_EQ(node(g, "valid")["shape"], (nlohmann::json{11, 13, 4}));
  EXPECT_EQ(node(g, "valid")["attrs"]["padding"], (nlohmann::json{0, 0, 0, 0}));
  EXPECT_EQ(node(g, "same")["shape"], (nlohmann::json{10, 12, 4}));
  EXPECT_EQ(node(g, "same")["attrs"]["padding"], (nlohmann::json{0, 1, 0, 1}));  // TF pads the odd pixel last
  EXPECT_EQ(node(g, "small_kernel")["shape"], (nlohmann::json{15, 18, 2}));
  EXPECT_EQ(node(g, "small_kernel")["attrs"]["padding"], (nlohmann::json{0, -2, 0, -1}));  // rows no input reaches
  EXPECT_FALSE(node(g, "small_kernel")["params"].contains("bias"));
  EXPECT_EQ(node(g, "extra")["shape"], (nlohmann::json{10, 11, 2}));
  EXPECT_EQ(node(g, "extra")["attrs"]["padding"], (nlohmann::json{0, 1, 1, 1}));
  EXPECT_EQ(node(g, "extra")["attrs"]["activation"], "relu");
  EXPECT_EQ(node(g, "valid")["op"], "conv2d_transpose");
  EXPECT_EQ(g.ir["params"]["valid/kernel"]["shape"], (nlohmann::json{3, 3, 4, 3}));  // Keras: [kh, kw, filters, in]
  EXPECT_EQ(g.ir["params"]["valid/kernel"]["init"], "glorot_uniform");
  EXPECT_EQ(g.ir["params"]["valid/bias"]["init"], "zeros");
}

TEST_F(UpsamplingGraphTest, UpsamplingAndResizeAreOneResizeOp) {
  Graph g = build({{{"type", "upsampling2d"}},
                   {{"type", "upsampling2d"}, {"size", {3, 1}}, {"interpolation", "bilinear"}},
                   {{"type", "resize"}, {"height", 7}, {"width", 4}},
                   {{"type", "resize"}, {"height", 2}, {"width", 2}, {"interpolation", "nearest"}}});
  const auto up = node(g, "upsampling2d");
  EXPECT_EQ(up["op"], "resize");
  EXPECT_EQ(up["shape"], (nlohmann::json{10, 12, 3}));
  EXPECT_EQ(up["attrs"], (nlohmann::json{{"height", 10}, {"width", 12}, {"interpolation", "nearest"}, {"size", {2, 2}}}));
  EXPECT_EQ(node(g, "upsampling2d_1")["shape"], (nlohmann::json{30, 12, 3}));
  EXPECT_EQ(node(g, "upsampling2d_1")["attrs"]["interpolation"], "bilinear");
  const auto r = node(g, "resize");
  EXPECT_EQ(r["op"], "resize");
  EXPECT_EQ(r["shape"], (nlohmann::json{7, 4, 3}));
  EXPECT_EQ(r["attrs"]["interpolation"], "bilinear");  // Keras Resizing's default
  EXPECT_FALSE(r["attrs"].contains("size"));
  EXPECT_EQ(node(g, "resize_1")["shape"], (nlohmann::json{2, 2, 3}));
  EXPECT_TRUE(g.ir["params"].empty());
}

TEST_F(UpsamplingGraphTest, MistakesAreReportedAtTheField) {
  // A rank-2 input (a sequence or a flattened image) is not an image.
  EXPECT_EQ(error({{{"type", "conv2d_transpose"}, {"filters", 2}, {"kernel", 2}}}, {8, 3}),
            "/model/layers/0: layer 'conv2d_transpose': conv2d_transpose needs an [H, W, C] input, got [8, 3]");
  EXPECT_EQ(error({{{"type", "upsampling2d"}}}, {8, 3}), "/model/layers/0: layer 'upsampling2d': upsampling2d needs an [H, W, C] input, got [8, 3]");
  EXPECT_EQ(error({{{"type", "resize"}, {"height", 2}, {"width", 2}}}, {8, 3}),
            "/model/layers/0: layer 'resize': resize needs an [H, W, C] input, got [8, 3]");
  EXPECT_EQ(error({{{"type", "conv2d_transpose"}, {"kernel", 2}}}), "/model/layers/0/filters: required field is missing");
  EXPECT_EQ(error({{{"type", "conv2d_transpose"}, {"filters", 2}}}), "/model/layers/0/kernel: required field is missing");
  EXPECT_EQ(error({{{"type", "conv2d_transpose"}, {"filters", 2}, {"kernel", 3}, {"strides", 2}, {"output_padding", 2}}}),
            "/model/layers/0/output_padding: must be at least 0 and smaller than the stride (2), got 2");
  EXPECT_EQ(error({{{"type", "conv2d_transpose"}, {"filters", 2}, {"kernel", 3}, {"padding", "full"}}}),
            "/model/layers/0/padding: must be \"valid\" or \"same\"");
  EXPECT_EQ(error({{{"type", "conv2d_transpose"}, {"filters", 2}, {"kernel", 3}, {"dilation", 2}}}),
            "/model/layers/0/dilation: unknown field 'dilation' for a conv2d_transpose layer; expected activation, "
            "bias_initializer, filters, kernel, kernel_initializer, output_padding, padding, strides, use_bias, type, name, "
            "inputs");
  EXPECT_EQ(error({{{"type", "upsampling2d"}, {"interpolation", "bicubic"}}}),
            "/model/layers/0/interpolation: must be \"nearest\" or \"bilinear\", got \"bicubic\"");
  EXPECT_EQ(error({{{"type", "upsampling2d"}, {"size", 0}}}).rfind("/model/layers/0/size: must be a positive integer", 0), 0u);
  EXPECT_EQ(error({{{"type", "resize"}, {"height", 4}}}), "/model/layers/0/width: required field is missing");
  EXPECT_EQ(error({{{"type", "resize"}, {"height", 4}, {"width", 4}, {"crop_to_aspect_ratio", true}}}),
            "/model/layers/0/crop_to_aspect_ratio: unknown field 'crop_to_aspect_ratio' for a resize layer; expected "
            "height, interpolation, width, type, name, inputs");
  EXPECT_EQ(error({{{"type", "upsampling2d"}, {"size", 1 << 23}}}).find("/model/layers/0: layer 'upsampling2d': the output"),
            0u);
}
