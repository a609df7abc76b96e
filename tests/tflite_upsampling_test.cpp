// The layers that make images larger in the int8 .tflite: conv2d_transpose as TRANSPOSE_CONV, resize (and
// upsampling2d) as RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR. A small decoder is calibrated on ramjet's own float
// activations, quantized, exported, and LiteRT's outputs for it must agree with ramjet's float outputs within what
// int8 rounding allows.
#include "ramjet/model/graph.hpp"
#include "ramjet/plugin/components.hpp"
#include "ramjet/plugin/host_api.hpp"
#include "onednn_harness.hpp"
#include "onednn_models.hpp"
#include "quantizer_calls.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>

using namespace ramjet::core;
using namespace ramjet::test::cpu_backend;
namespace fs = std::filesystem;

namespace {

class Int8Plugin {
 public:
  explicit Int8Plugin(const json& quantizer_config) {
    CreateArgs args;
    args.where = "test.json#/export";
    exporter_.emplace(registry_.component(RAMJET_KIND_EXPORTER, "tflite"), args);
    args.config = quantizer_config;
    quantizer_.emplace(registry_.component(RAMJET_KIND_QUANTIZER, "int8"), args);
  }
  Status observe(const std::string& name, const std::vector<float>& values) {
    return ramjet::test::observe(*quantizer_, name, values);
  }
  Status quantize(const json& graph, Example& params, json& qgraph, Example& qparams) {
    return ramjet::test::quantize(*quantizer_, graph, params, qgraph, qparams);
  }
  Status export_model(const json& qgraph, Example& params, const fs::path& path) {
    const std::string text = qgraph.dump(), p = path.string();
    return call([&](ramjet_error* e) {
      return exporter_->table().export_model(exporter_->self(), text.c_str(), &params, p.c_str(), e);
    });
  }

 private:
  PluginRegistry registry_{DiscoveryOptions{{ramjet::test::stock_plugin_dir()}, {}, {}}};
  std::optional<Instance<ramjet_exporter_vtable>> exporter_;
  std::optional<ramjet::test::QuantizerInstance> quantizer_;
};

// Runs the model in LiteRT on float32 `input` (one example, raw file) and returns {"ops": [...], "output": [...]};
// nullopt when LiteRT is not installed. `builtin_kernels`: TFLite's own kernels only, without the XNNPACK delegate
// LiteRT applies by default (XNNPACK's int8 bilinear resize weighs in 1/2048 steps computed in float, and can land
// one step away from TFLite's 1/1024 integer sampling).
std::optional<json> run_litert(const fs::path& model, const std::vector<float>& input, const ramjet::test::TempDir& tmp,
                               bool builtin_kernels = false) {
  const fs::path python = ramjet::test::venv_python();
  if (!fs::exists(python) ||
      ramjet::test::run(ramjet::test::quote(python.string()) + " -c 'import ai_edge_litert.interpreter'").exit_code != 0)
    return std::nullopt;
  {
    std::ofstream raw(tmp / "x.bin", std::ios::binary);
    raw.write(reinterpret_cast<const char*>(input.data()), static_cast<std::streamsize>(input.size() * sizeof(float)));
  }
  ramjet::test::write_file(tmp / "run.py", R"(import json, sys
import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType
resolver = OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES if sys.argv[3] == "builtin" else OpResolverType.AUTO
it = Interpreter(model_path=sys.argv[1], experimental_op_resolver_type=resolver)
it.allocate_tensors()
inp, out = it.get_input_details()[0], it.get_output_details()[0]
it.set_tensor(inp["index"], np.fromfile(sys.argv[2], dtype=np.float32).reshape(inp["shape"]))
it.invoke()
ops = [op["op_name"] for op in it._get_ops_details() if op["op_name"] != "DELEGATE"]
print("RESULT " + json.dumps({"ops": ops, "output": [float(v) for v in it.get_tensor(out["index"]).flatten()]}))
)");
  const auto r = ramjet::test::run(ramjet::test::quote(python.string()) + " " +
                                   ramjet::test::quote((tmp / "run.py").string()) + " " +
                                   ramjet::test::quote(model.string()) + " " +
                                   ramjet::test::quote((tmp / "x.bin").string()) +
                                   (builtin_kernels ? " builtin" : " auto") + " 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto at = r.output.find("RESULT ");
  if (at == std::string::npos) {
    ADD_FAILURE() << "LiteRT printed no result:\n" << r.output;
    return json::object();
  }
  return json::parse(r.output.substr(at + 7));
}

// A decoder taking x [4, 5, 3], run in float32 on a random batch (every node's output kept), calibrated on that
// batch, quantized to full integer with a float32 interface and exported to `file`.
struct QuantizedDecoder {
  static constexpr int64_t kPerExample = 4 * 5 * 3;
  json ir, qgraph;
  Example params, out, qparams;
  std::vector<float> x;
};

void quantize_decoder(const json& model, int64_t batch, uint32_t param_seed, uint32_t data_seed, const fs::path& file,
                      QuantizedDecoder& q) {
  q.ir = build_graph(model, Origin{"test.json"}).ir;
  q.ir.erase("loss");
  q.ir.erase("labels");
  json every = q.ir;
  every["outputs"] = json::array();
  for (const auto& n : q.ir["nodes"]) every["outputs"].push_back(n["name"]);
  q.params = random_params(q.ir, param_seed, 0.4f);
  Harness h;
  Status s = h.compile(every, {{"batch", batch}});
  ASSERT_TRUE(s.ok()) << s.message;
  ASSERT_TRUE(h.set_state("parameters", q.params).ok());
  std::mt19937 rng(data_seed);
  q.x = uniform(static_cast<size_t>(batch * QuantizedDecoder::kPerExample), rng);
  Example in;
  put(in, "x", {batch, 4, 5, 3}, q.x);
  s = h.forward(in, q.out, false);
  ASSERT_TRUE(s.ok()) << s.message;

  Int8Plugin plugin({{"input_type", "float32"}, {"output_type", "float32"}});
  ASSERT_TRUE(plugin.observe("x", q.x).ok());
  for (const auto& n : q.ir["nodes"]) ASSERT_TRUE(plugin.observe(n["name"], values(q.out, n["name"])).ok());
  s = plugin.quantize(q.ir, q.params, q.qgraph, q.qparams);
  ASSERT_TRUE(s.ok()) << s.message;
  s = plugin.export_model(q.qgraph, q.qparams, file);
  ASSERT_TRUE(s.ok()) << s.message;
}

}  // namespace

TEST(TfliteUpsampling, LiteRtRunsTransposeConvAndResizesCloseToRamjetsFloatOutputs) {
  // x [4, 5, 3] → conv2d_transpose 3×3/2 "same" relu → upsampling2d bilinear → resize 7×9 nearest →
  // conv2d_transpose 2×2/2 "valid" → [14, 18, 2].
  const json model = {
      {"input", {{"x", {4, 5, 3}}}},
      {"layers",
       {{{"type", "conv2d_transpose"}, {"name", "t1"}, {"filters", 6}, {"kernel", 3}, {"strides", 2},
         {"padding", "same"}, {"activation", "relu"}},
        {{"type", "upsampling2d"}, {"name", "u"}, {"interpolation", "bilinear"}},
        {{"type", "resize"}, {"name", "r"}, {"height", 7}, {"width", 9}, {"interpolation", "nearest"}},
        {{"type", "conv2d_transpose"}, {"name", "t2"}, {"filters", 2}, {"kernel", 2}, {"strides", 2}}}},
      {"loss", {{"type", "mse"}}}};
  const int64_t batch = 16;
  ramjet::test::TempDir tmp;
  const fs::path file = tmp / "decoder.tflite";
  QuantizedDecoder q;
  ASSERT_NO_FATAL_FAILURE(quantize_decoder(model, batch, 3, 21, file, q));
  const json& qgraph = q.qgraph;
  const std::vector<float>& x = q.x;
  const std::vector<float> want_all = values(q.out, "t2");
  const size_t per_example = want_all.size() / static_cast<size_t>(batch);
  const float out_scale = qgraph["quantization"]["tensors"]["t2"]["scale"][0].get<float>();
  for (int64_t example : {0, 5}) {
    const std::vector<float> one(x.begin() + example * QuantizedDecoder::kPerExample,
                                 x.begin() + (example + 1) * QuantizedDecoder::kPerExample);
    const auto result = run_litert(file, one, tmp);
    if (!result) GTEST_SKIP() << "LiteRT (ai-edge-litert) is not installed in " << ramjet::test::venv_python();
    EXPECT_EQ((*result)["ops"], (json{"QUANTIZE", "TRANSPOSE_CONV", "RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR",
                                       "TRANSPOSE_CONV", "DEQUANTIZE"}));
    const auto got = (*result)["output"].get<std::vector<float>>();
    ASSERT_EQ(got.size(), per_example);
    // Each of the five quantized tensors on the way rounds by half a step, and the int8 kernels a little more.
    // A wrong layout, padding or sampling would be off by whole activations (the outputs span ~100 steps).
    double worst = 0, sum = 0, range = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const double want = want_all[static_cast<size_t>(example) * per_example + i];
      worst = std::max(worst, std::fabs(got[i] - want));
      sum += std::fabs(got[i] - want);
      range = std::max(range, std::fabs(want));
    }
    EXPECT_GT(range, 20 * out_scale) << "outputs too small to prove anything";
    EXPECT_LT(worst, 6 * out_scale) << "example " << example;
    EXPECT_LT(sum / static_cast<double>(got.size()), 1.5 * out_scale) << "example " << example;
  }
}

TEST(TfliteUpsampling, BilinearSamplingAtHalfPixelCentresIsWhatTheFileSays) {
  // The exporter writes half_pixel_centers (the IR's and tf.image.resize's sampling), never align_corners, and a
  // conv2d_transpose whose padding no TFLite option reproduces is refused naming the layer.
  const json model = {{"input", {{"x", {3, 3, 2}}}},
                      {"layers",
                       {{{"type", "resize"}, {"name", "r"}, {"height", 5}, {"width", 4}},
                        {{"type", "conv2d_transpose"}, {"name", "t"}, {"filters", 2}, {"kernel", 3}, {"strides", 2}}}},
                      {"loss", {{"type", "mse"}}}};
  json ir = build_graph(model, Origin{"test.json"}).ir;
  ir.erase("loss");
  ir.erase("labels");
  Example params = random_params(ir, 4, 0.4f);
  Int8Plugin plugin({{"input_type", "float32"}, {"output_type", "float32"}});
  for (const char* t : {"x", "r", "t"}) ASSERT_TRUE(plugin.observe(t, {-1.0f, 1.0f}).ok());
  json qgraph;
  Example qparams;
  ASSERT_TRUE(plugin.quantize(ir, params, qgraph, qparams).ok());
  ramjet::test::TempDir tmp;
  json odd = qgraph;
  odd["nodes"][1]["attrs"]["padding"] = {1, -1, 0, 0};  // starts one row in: neither SAME nor VALID
  const Status refused = plugin.export_model(odd, qparams, tmp / "odd.tflite");
  EXPECT_EQ(refused.code, RAMJET_ERR_UNSUPPORTED);
  EXPECT_NE(refused.message.find("'t'"), std::string::npos) << refused.message;
  EXPECT_NE(refused.message.find("TRANSPOSE_CONV"), std::string::npos) << refused.message;
  EXPECT_FALSE(fs::exists(tmp / "odd.tflite"));

  const fs::path file = tmp / "r.tflite";
  ASSERT_TRUE(plugin.export_model(qgraph, qparams, file).ok());
  const auto r = ramjet::test::run(std::string(RAMJET_TEST_FLATC) + " --json --strict-json --raw-binary -o " +
                                   ramjet::test::quote(tmp.path().string()) + " " +
                                   ramjet::test::quote((ramjet::test::source_dir() / "third_party/tflite/schema.fbs").string()) +
                                   " -- " + ramjet::test::quote(file.string()) + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json decoded = json::parse(ramjet::test::read_file(tmp / "r.json"));
  bool found = false;
  for (const auto& op : decoded["subgraphs"][0]["operators"])
    if (op.value("builtin_options_type", std::string()) == "ResizeBilinearOptions") {
      found = true;
      EXPECT_EQ(op["builtin_options"].value("half_pixel_centers", false), true);
      EXPECT_EQ(op["builtin_options"].value("align_corners", false), false);
    }
  EXPECT_TRUE(found) << decoded["subgraphs"][0]["operators"].dump();
  // TRANSPOSE_CONV's int8 weights (its input 1, OHWI) carry a scale per filter on dimension 0, as TensorFlow's
  // converter writes them: the quantizer keeps the output channels' ranges apart.
  bool weights_checked = false;
  for (const auto& op : decoded["subgraphs"][0]["operators"])
    if (op.value("builtin_options_type", std::string()) == "TransposeConvOptions") {
      const json& w = decoded["subgraphs"][0]["tensors"][op["inputs"][1].get<size_t>()];
      EXPECT_EQ(w["type"], "INT8") << w.dump();
      EXPECT_EQ(w["quantization"]["scale"].size(), 2u) << w.dump();
      EXPECT_EQ(w["quantization"].value("quantized_dimension", 0), 0) << w.dump();
      weights_checked = true;
    }
  EXPECT_TRUE(weights_checked);
}

TEST(TfliteUpsampling, DynamicRangeKeepsTheTransposeConvFloatAndMatchesRamjet) {
  // Dynamic range quantizes only conv2d/dense kernels: TRANSPOSE_CONV and the resizes stay float32 ops, so LiteRT
  // must give ramjet's float outputs up to float rounding.
  const json model = {{"input", {{"x", {3, 4, 2}}}},
                      {"layers",
                       {{{"type", "conv2d_transpose"}, {"name", "t"}, {"filters", 3}, {"kernel", 3}, {"strides", 2},
                         {"padding", "same"}, {"output_padding", 1}, {"activation", "relu"}},
                        {{"type", "resize"}, {"name", "r"}, {"height", 5}, {"width", 11}}}},
                      {"loss", {{"type", "mse"}}}};
  json ir = build_graph(model, Origin{"test.json"}).ir;
  ir.erase("loss");
  ir.erase("labels");
  Example params = random_params(ir, 8, 0.5f);
  Harness h;
  ASSERT_TRUE(h.compile(ir, {{"batch", 1}}).ok());
  ASSERT_TRUE(h.set_state("parameters", params).ok());
  std::mt19937 rng(2);
  const std::vector<float> x = uniform(24, rng);
  Example in, out;
  put(in, "x", {1, 3, 4, 2}, x);
  ASSERT_TRUE(h.forward(in, out, false).ok());
  Int8Plugin plugin(json{{"mode", "dynamic_range"}});
  json qgraph;
  Example qparams;
  Status s = plugin.quantize(ir, params, qgraph, qparams);
  ASSERT_TRUE(s.ok()) << s.message;
  ramjet::test::TempDir tmp;
  s = plugin.export_model(qgraph, qparams, tmp / "dynamic.tflite");
  ASSERT_TRUE(s.ok()) << s.message;
  const auto result = run_litert(tmp / "dynamic.tflite", x, tmp);
  if (!result) GTEST_SKIP() << "LiteRT (ai-edge-litert) is not installed in " << ramjet::test::venv_python();
  EXPECT_EQ((*result)["ops"], (json{"TRANSPOSE_CONV", "RESIZE_BILINEAR"}));
  expect_near_all((*result)["output"].get<std::vector<float>>(), values(out, "r"), 1e-5, "dynamic range");
}

TEST(TfliteUpsampling, TheCpuBackendsInt8ProgramGivesWhatLiteRtGivesForTheSameFile) {
  // Every image-to-image op's int8 form in the cpu backend, against LiteRT running the exported file on the same
  // float inputs. x [4, 5, 3] → t1 conv2d_transpose 3×3/2 "same" relu [8, 10, 8] → p zero_padding2d [10, 12, 8]
  // → c cropping2d [9, 10, 8] → d depth_to_space 2 [18, 20, 2] → r bilinear resize down to [11, 13, 2]; from r:
  // t2 conv2d_transpose 2×2/2 [22, 26, 2], n nearest resize to [15, 26, 2] (1.36× rows), b bilinear upsampling
  // [22, 26, 2]; j joins n, t2 and b on rows (Keras axis 1; each requantized to j's range), k joins j to itself on
  // columns (axis 2).
  const json model = {
      {"input", {{"x", {4, 5, 3}}}},
      {"layers",
       {{{"type", "conv2d_transpose"}, {"name", "t1"}, {"filters", 8}, {"kernel", 3}, {"strides", 2},
         {"padding", "same"}, {"activation", "relu"}},
        {{"type", "zero_padding2d"}, {"name", "p"}, {"padding", {{1, 1}, {2, 0}}}},
        {{"type", "cropping2d"}, {"name", "c"}, {"cropping", {{1, 0}, {1, 1}}}},
        {{"type", "depth_to_space"}, {"name", "d"}, {"block_size", 2}},
        {{"type", "resize"}, {"name", "r"}, {"height", 11}, {"width", 13}, {"interpolation", "bilinear"}},
        {{"type", "conv2d_transpose"}, {"name", "t2"}, {"filters", 2}, {"kernel", 2}, {"strides", 2}, {"inputs", "r"}},
        {{"type", "resize"}, {"name", "n"}, {"height", 15}, {"width", 26}, {"interpolation", "nearest"}, {"inputs", "r"}},
        {{"type", "upsampling2d"}, {"name", "b"}, {"size", 2}, {"interpolation", "bilinear"}, {"inputs", "r"}},
        {{"type", "concat"}, {"name", "j"}, {"axis", 1}, {"inputs", {"n", "t2", "b"}}},
        {{"type", "concat"}, {"name", "k"}, {"axis", 2}, {"inputs", {"j", "j"}}}}},
      {"loss", {{"type", "mse"}}}};
  const int64_t batch = 8;
  ramjet::test::TempDir tmp;
  const fs::path file = tmp / "image_ops.tflite";
  QuantizedDecoder q;
  ASSERT_NO_FATAL_FAILURE(quantize_decoder(model, batch, 5, 8, file, q));
  const json& qgraph = q.qgraph;
  const std::vector<float>& x = q.x;

  Harness int8;
  Status s = int8.compile(qgraph, {{"precision", "int8"}, {"batch", batch}});
  ASSERT_TRUE(s.ok()) << s.message;
  s = int8.set_state("parameters", q.qparams);
  ASSERT_TRUE(s.ok()) << s.message;
  Example in8, out8;
  put(in8, "x", {batch, 4, 5, 3}, x);
  s = int8.forward(in8, out8, false);
  ASSERT_TRUE(s.ok()) << s.message;
  const std::vector<float> ours = values(out8, "k"), floats = values(q.out, "k");
  const size_t per_example = ours.size() / static_cast<size_t>(batch);
  ASSERT_EQ(per_example, size_t{59 * 52 * 2});  // 15 + 22 + 22 rows
  const float step = qgraph["quantization"]["tensors"]["k"]["scale"][0].get<float>();

  for (int64_t example : {0, 5}) {
    const std::vector<float> one(x.begin() + example * QuantizedDecoder::kPerExample,
                                 x.begin() + (example + 1) * QuantizedDecoder::kPerExample);
    const auto result = run_litert(file, one, tmp, /*builtin_kernels=*/true);
    if (!result) GTEST_SKIP() << "LiteRT (ai-edge-litert) is not installed in " << ramjet::test::venv_python();
    const auto litert = (*result)["output"].get<std::vector<float>>();
    ASSERT_EQ(litert.size(), per_example);
    // Both run the file's integer arithmetic. TRANSPOSE_CONV requantizes with TFLite's fixed-point multiplier and
    // ours with a float scale, so a sum close to half a step can round the other way: one step, rarely (5 of 1,144
    // values of t2 when this was written); a wrong tap, offset, weight or zero point would miss by many steps.
    size_t same = 0;
    double worst_steps = 0, float_range = 0;
    for (size_t i = 0; i < per_example; ++i) {
      const float mine = ours[static_cast<size_t>(example) * per_example + i];
      const double steps = std::fabs(mine - litert[i]) / step;
      worst_steps = std::max(worst_steps, steps);
      if (steps < 0.5) ++same;
      float_range = std::max(float_range, std::fabs(static_cast<double>(floats[static_cast<size_t>(example) * per_example + i])));
    }
    EXPECT_GT(float_range, 20 * step) << "outputs too small to prove anything";
    EXPECT_LE(worst_steps, 1.0 + 1e-3) << "example " << example;
    EXPECT_GE(static_cast<double>(same), 0.99 * static_cast<double>(per_example))
        << "example " << example << ": " << same << " of " << per_example << " equal";
  }
}
