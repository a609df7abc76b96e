// The tflite exporter (plugin tflite) through the C ABI: the file's identifier, what flatc decodes from it
// against the vendored schema (operators, versions, tensors, quantization, buffers, metadata), the edges for
// uint8/float32 interfaces, dynamic-range (weights-only int8) models, atomic writes, and LiteRT loading and
// running what it wrote.
#include "ramjet/plugin/components.hpp"
#include "ramjet/plugin/example.hpp"
#include "ramjet/plugin/host_api.hpp"
#include "ramjet/plugin/tensor.hpp"
#include "quantizer_calls.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <optional>

using namespace ramjet::core;
using nlohmann::json;
using Shape = std::vector<int64_t>;
namespace fs = std::filesystem;
using ramjet::test::call;
using ramjet::test::Instance;
using ramjet::test::QuantizerInstance;
using ramjet::test::Status;
using ramjet::test::values_of;

namespace {

class Plugin {
 public:
  explicit Plugin(const json& quantizer_config = json::object()) {
    CreateArgs args;
    args.where = "test.json#/export";
    exporter_.emplace(registry_.component(RAMJET_KIND_EXPORTER, "tflite"), args);
    args.config = quantizer_config;
    quantizer_.emplace(registry_.component(RAMJET_KIND_QUANTIZER, "int8"), args);
  }
  Status export_model(const json& qgraph, Example& params, const fs::path& path) {
    const std::string text = qgraph.dump(), p = path.string();
    return call([&](ramjet_error* e) {
      return exporter_->table().export_model(exporter_->self(), text.c_str(), &params, p.c_str(), e);
    });
  }
  Status observe(const std::string& name, const std::vector<float>& values) {
    return ramjet::test::observe(*quantizer_, name, values);
  }
  Status quantize(const json& graph, Example& params, json& qgraph, Example& qparams) {
    return ramjet::test::quantize(*quantizer_, graph, params, qgraph, qparams);
  }

 private:
  PluginRegistry registry_{DiscoveryOptions{{ramjet::test::stock_plugin_dir()}, {}, {}}};
  std::optional<Instance<ramjet_exporter_vtable>> exporter_;
  std::optional<QuantizerInstance> quantizer_;
};

template <class T>
void put_typed(Example& e, const std::string& name, const Shape& shape, const std::vector<T>& values) {
  TensorPtr t = make_tensor(DLDataType{std::is_same_v<T, float> ? uint8_t{kDLFloat} : uint8_t{kDLInt}, sizeof(T) * 8, 1}, shape);
  std::copy(values.begin(), values.end(), static_cast<T*>(t->dl_tensor.data));
  e.set(name, std::move(t));
}

// Temporary files the atomic writer left in `dir` (".<file>.tmp<random>"), one name a line; "" when none.
std::string leftovers(const ramjet::test::TempDir& dir) {
  std::string names;
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    const std::string name = entry.path().filename().string();
    if (name.find(".tmp") != std::string::npos) names += name + "\n";
  }
  return names;
}

json quant(float scale, int zero_point) { return {{"dtype", "int8"}, {"scale", {scale}}, {"zero_point", {zero_point}}}; }

// A qgraph written by hand, as the int8 quantizer would: image [4, 4, 1] → conv2d 3×3 SAME (2 filters, fused
// relu) → max_pool 2×2 → flatten → dense (3). Float weights are kept for the reference computation.
struct TinyModel {
  json qgraph;
  Example params;
  std::vector<float> kernel, bias, dense_kernel, dense_bias;  // dequantized values
  std::vector<float> kernel_scales;
  float dense_scale = 0;
};

TinyModel tiny_model(const std::string& input_type = "int8", const std::string& output_type = "int8") {
  TinyModel m;
  const float image_scale = 1.0f / 255.0f, conv_scale = 0.02f, dense_out_scale = 0.05f;
  // conv kernel [3][3][1][2]: distinct values so that a transposition error changes the output.
  std::vector<int8_t> qk(18);
  for (int i = 0; i < 18; ++i) qk[static_cast<size_t>(i)] = static_cast<int8_t>((i * 37) % 255 - 127);
  m.kernel_scales = {0.004f, 0.006f};
  const std::vector<int32_t> qb = {1000, -2000};
  std::vector<int8_t> qd(24);  // dense [8][3]
  for (int i = 0; i < 24; ++i) qd[static_cast<size_t>(i)] = static_cast<int8_t>((i * 53) % 255 - 127);
  m.dense_scale = 0.01f;
  const std::vector<int32_t> qdb = {500, -300, 0};
  for (int i = 0; i < 18; ++i) m.kernel.push_back(qk[static_cast<size_t>(i)] * m.kernel_scales[static_cast<size_t>(i % 2)]);
  for (int c = 0; c < 2; ++c) m.bias.push_back(qb[static_cast<size_t>(c)] * image_scale * m.kernel_scales[static_cast<size_t>(c)]);
  for (int8_t v : qd) m.dense_kernel.push_back(v * m.dense_scale);
  for (int32_t v : qdb) m.dense_bias.push_back(v * conv_scale * m.dense_scale);
  put_typed(m.params, "conv2d/kernel", {3, 3, 1, 2}, qk);
  put_typed(m.params, "conv2d/bias", {2}, qb);
  put_typed(m.params, "dense/kernel", {8, 3}, qd);
  put_typed(m.params, "dense/bias", {3}, qdb);

  const json conv_q = quant(conv_scale, -128);
  m.qgraph = {
      {"inputs", {{{"name", "image"}, {"shape", {4, 4, 1}}, {"dtype", "float32"}}}},
      {"nodes",
       {{{"name", "conv2d"}, {"op", "conv2d"}, {"inputs", {"image"}}, {"shape", {4, 4, 2}},
         {"attrs", {{"filters", 2}, {"kernel", {3, 3}}, {"strides", {1, 1}}, {"padding", {1, 1, 1, 1}}, {"dilation", {1, 1}},
                    {"groups", 1}, {"use_bias", true}, {"activation", "relu"}}},
         {"params", {{"kernel", "conv2d/kernel"}, {"bias", "conv2d/bias"}}}},
        {{"name", "max_pool"}, {"op", "max_pool"}, {"inputs", {"conv2d"}}, {"shape", {2, 2, 2}},
         {"attrs", {{"pool", {2, 2}}, {"strides", {2, 2}}, {"padding", {0, 0, 0, 0}}}}},
        {{"name", "flatten"}, {"op", "flatten"}, {"inputs", {"max_pool"}}, {"shape", {8}}, {"attrs", json::object()}},
        {{"name", "dense"}, {"op", "dense"}, {"inputs", {"flatten"}}, {"shape", {3}},
         {"attrs", {{"units", 3}, {"use_bias", true}, {"activation", "linear"}}},
         {"params", {{"kernel", "dense/kernel"}, {"bias", "dense/bias"}}}}}},
      {"outputs", {"dense"}},
      {"params", {{"conv2d/kernel", {{"shape", {3, 3, 1, 2}}, {"dtype", "int8"}}},
                  {"conv2d/bias", {{"shape", {2}}, {"dtype", "int32"}}},
                  {"dense/kernel", {{"shape", {8, 3}}, {"dtype", "int8"}}},
                  {"dense/bias", {{"shape", {3}}, {"dtype", "int32"}}}}},
      {"quantization",
       {{"version", 1}, {"mode", "full_integer"}, {"input_type", input_type}, {"output_type", output_type},
        {"calibration", {{"method", "minmax"}, {"batches", 1}}},
        {"tensors",
         {{"image", quant(image_scale, -128)},
          {"conv2d", conv_q},
          {"max_pool", conv_q},
          {"flatten", conv_q},
          {"dense", quant(dense_out_scale, 0)},
          {"conv2d/kernel", {{"dtype", "int8"}, {"scale", m.kernel_scales}, {"zero_point", {0, 0}}, {"axis", 3}}},
          {"conv2d/bias", {{"dtype", "int32"}, {"scale", {image_scale * m.kernel_scales[0], image_scale * m.kernel_scales[1]}},
                           {"zero_point", {0, 0}}, {"axis", 0}}},
          {"dense/kernel", {{"dtype", "int8"}, {"scale", {m.dense_scale}}, {"zero_point", {0}}}},
          {"dense/bias", {{"dtype", "int32"}, {"scale", {conv_scale * m.dense_scale}}, {"zero_point", {0}}}}}}}}};
  return m;
}

// A 3×3 SAME convolution of a one-channel size×size image (HWIO kernel [3][3][1][filters]) with a fused relu.
std::vector<float> conv3x3_same_relu(const std::vector<float>& image, int size, int filters,
                                     const std::vector<float>& kernel, const std::vector<float>& bias) {
  std::vector<float> conv(static_cast<size_t>(size * size * filters));
  for (int y = 0; y < size; ++y)
    for (int x = 0; x < size; ++x)
      for (int c = 0; c < filters; ++c) {
        float acc = bias[static_cast<size_t>(c)];
        for (int u = 0; u < 3; ++u)
          for (int v = 0; v < 3; ++v) {
            const int iy = y + u - 1, ix = x + v - 1;
            if (iy < 0 || iy >= size || ix < 0 || ix >= size) continue;
            acc += image[static_cast<size_t>(iy * size + ix)] * kernel[static_cast<size_t>((u * 3 + v) * filters + c)];
          }
        conv[static_cast<size_t>((y * size + x) * filters + c)] = std::max(acc, 0.0f);
      }
  return conv;
}

// A 2×2 max pool, strides 2, of a size×size×channels NHWC map.
std::vector<float> max_pool_2x2(const std::vector<float>& in, int size, int channels) {
  const int half = size / 2;
  std::vector<float> pooled(static_cast<size_t>(half * half * channels));
  for (int y = 0; y < half; ++y)
    for (int x = 0; x < half; ++x)
      for (int c = 0; c < channels; ++c) {
        float best = -1e30f;
        for (int u = 0; u < 2; ++u)
          for (int v = 0; v < 2; ++v)
            best = std::max(best, in[static_cast<size_t>(((2 * y + u) * size + 2 * x + v) * channels + c)]);
        pooled[static_cast<size_t>((y * half + x) * channels + c)] = best;
      }
  return pooled;
}

// The float computation the tiny model approximates (NHWC, HWIO, SAME padding, relu, 2×2 max pool, dense).
std::vector<float> tiny_reference(const TinyModel& m, const std::vector<float>& image) {
  const std::vector<float> pooled = max_pool_2x2(conv3x3_same_relu(image, 4, 2, m.kernel, m.bias), 4, 2);
  std::vector<float> out(3);
  for (int o = 0; o < 3; ++o) {
    float acc = m.dense_bias[static_cast<size_t>(o)];
    for (int i = 0; i < 8; ++i) acc += pooled[static_cast<size_t>(i)] * m.dense_kernel[static_cast<size_t>(i * 3 + o)];
    out[static_cast<size_t>(o)] = acc;
  }
  return out;
}

std::string read_prefix(const fs::path& path, size_t n) { return ramjet::test::read_file(path).substr(0, n); }

// flatc's JSON view of a .tflite file, decoded against the vendored schema (defaults included).
json decode(const fs::path& model, const ramjet::test::TempDir& tmp) {
  const fs::path schema = ramjet::test::source_dir() / "third_party/tflite/schema.fbs";
  const auto r = ramjet::test::run(ramjet::test::quote(RAMJET_TEST_FLATC) + " --json --strict-json --defaults-json --raw-binary -o " +
                                   ramjet::test::quote(tmp.path().string()) + " " + ramjet::test::quote(schema.string()) +
                                   " -- " + ramjet::test::quote(model.string()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const fs::path out = tmp.path() / (model.stem().string() + ".json");
  return json::parse(ramjet::test::read_file(out));
}

std::vector<std::string> operator_names(const json& model) {
  std::vector<std::string> names;
  for (const auto& op : model["subgraphs"][0]["operators"])
    names.push_back(model["operator_codes"][op["opcode_index"].get<size_t>()]["builtin_code"]);
  return names;
}

const json& tensor_named(const json& model, const std::string& name) {
  for (const auto& t : model["subgraphs"][0]["tensors"])
    if (t["name"] == name) return t;
  static const json none;
  ADD_FAILURE() << "no tensor named " << name;
  return none;
}

// ---- the file ---------------------------------------------------------------------------------------------

TEST(TfliteExporter, WritesASchemaV3FileWithTheTfl3Identifier) {
  ramjet::test::TempDir tmp;
  Plugin plugin;
  TinyModel m = tiny_model();
  const fs::path path = tmp / "tiny.tflite";
  const Status s = plugin.export_model(m.qgraph, m.params, path);
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_EQ(read_prefix(path, 8).substr(4), "TFL3");
  EXPECT_EQ(leftovers(tmp), "");
}

TEST(TfliteExporter, FlatcDecodesOperatorsTensorsAndQuantization) {
  ramjet::test::TempDir tmp;
  Plugin plugin;
  TinyModel m = tiny_model();
  const fs::path path = tmp / "tiny.tflite";
  ASSERT_TRUE(plugin.export_model(m.qgraph, m.params, path).ok());
  const json model = decode(path, tmp);
  EXPECT_EQ(model["version"], 3);
  EXPECT_EQ(operator_names(model), (std::vector<std::string>{"CONV_2D", "MAX_POOL_2D", "RESHAPE", "FULLY_CONNECTED"}));
  const std::map<std::string, std::pair<int, int>> codes = {
      {"CONV_2D", {3, 3}}, {"MAX_POOL_2D", {17, 2}}, {"RESHAPE", {22, 1}}, {"FULLY_CONNECTED", {9, 4}}};
  for (const auto& code : model["operator_codes"]) {
    const auto& [deprecated, version] = codes.at(code["builtin_code"]);
    EXPECT_EQ(code["deprecated_builtin_code"], deprecated) << code.dump();
    EXPECT_EQ(code["version"], version) << code.dump();
  }
  const json& ops = model["subgraphs"][0]["operators"];
  EXPECT_EQ(ops[0]["builtin_options"]["fused_activation_function"], "RELU");
  EXPECT_EQ(ops[0]["builtin_options"]["padding"], "SAME");
  EXPECT_EQ(ops[1]["builtin_options"]["padding"], "VALID");
  EXPECT_EQ(ops[1]["builtin_options"]["filter_width"], 2);
  EXPECT_EQ(ops[2]["builtin_options"]["new_shape"], json({-1, 8}));

  // Buffer 0 is the empty sentinel; activations point at it, each constant has a buffer of its own.
  EXPECT_TRUE(!model["buffers"][0].contains("data") || model["buffers"][0]["data"].empty());
  std::set<int> constant_buffers;
  for (const auto& t : model["subgraphs"][0]["tensors"]) {
    const std::string name = t["name"];
    const bool constant = name.find("/kernel") != std::string::npos || name.find("/bias") != std::string::npos ||
                          name.find("/shape") != std::string::npos;
    if (constant) {
      EXPECT_GT(t["buffer"].get<int>(), 0) << name;
      EXPECT_TRUE(constant_buffers.insert(t["buffer"].get<int>()).second) << name << " shares a buffer";
    } else {
      EXPECT_EQ(t["buffer"], 0) << name;
    }
  }
  EXPECT_EQ(constant_buffers.size(), 5u);

  const json& image = tensor_named(model, "image");
  EXPECT_EQ(image["type"], "INT8");
  EXPECT_EQ(image["shape"], json({1, 4, 4, 1}));
  EXPECT_EQ(image["shape_signature"], json({-1, 4, 4, 1}));
  EXPECT_EQ(image["quantization"]["zero_point"], json({-128}));
  EXPECT_NEAR(image["quantization"]["scale"][0].get<float>(), 1.0f / 255.0f, 1e-6f);  // flatc prints 6 digits

  const json& kernel = tensor_named(model, "conv2d/kernel");  // OHWI, per channel on axis 0
  EXPECT_EQ(kernel["type"], "INT8");
  EXPECT_EQ(kernel["shape"], json({2, 3, 3, 1}));
  EXPECT_EQ(kernel["quantization"].value("quantized_dimension", 0), 0);
  ASSERT_EQ(kernel["quantization"]["scale"].size(), 2u);
  EXPECT_NEAR(kernel["quantization"]["scale"][1].get<float>(), 0.006f, 1e-8f);
  // OHWI: output channel 1's first value is HWIO element [0][0][0][1].
  const auto kernel_data = model["buffers"][kernel["buffer"].get<size_t>()]["data"].get<std::vector<uint8_t>>();
  ASSERT_EQ(kernel_data.size(), 18u);
  EXPECT_EQ(static_cast<int8_t>(kernel_data[9]), static_cast<int8_t>((1 * 37) % 255 - 127));

  const json& bias = tensor_named(model, "conv2d/bias");
  EXPECT_EQ(bias["type"], "INT32");
  EXPECT_EQ(bias["quantization"]["scale"].size(), 2u);

  const json& dense = tensor_named(model, "dense/kernel");  // [out, in], per tensor
  EXPECT_EQ(dense["shape"], json({3, 8}));
  EXPECT_EQ(dense["quantization"]["scale"].size(), 1u);
  const json& out = tensor_named(model, "dense");
  EXPECT_EQ(out["shape"], json({1, 3}));
  EXPECT_NEAR(out["quantization"]["scale"][0].get<float>(), 0.05f, 1e-7f);

  // The qgraph rides along in the metadata.
  ASSERT_EQ(model["metadata"].size(), 1u);
  EXPECT_EQ(model["metadata"][0]["name"], "ramjet_qgraph");
  const auto bytes = model["buffers"][model["metadata"][0]["buffer"].get<size_t>()]["data"].get<std::vector<uint8_t>>();
  EXPECT_EQ(json::parse(std::string(bytes.begin(), bytes.end())), m.qgraph);
}

TEST(TfliteExporter, Uint8AndFloat32InterfacesConvertAtTheEdges) {
  ramjet::test::TempDir tmp;
  Plugin plugin;
  TinyModel f = tiny_model("float32", "float32");
  ASSERT_TRUE(plugin.export_model(f.qgraph, f.params, tmp / "float.tflite").ok());
  const json fm = decode(tmp / "float.tflite", tmp);
  const auto names = operator_names(fm);
  EXPECT_EQ(names.front(), "QUANTIZE");
  EXPECT_EQ(names.back(), "DEQUANTIZE");
  EXPECT_EQ(tensor_named(fm, "image")["type"], "FLOAT32");
  EXPECT_EQ(tensor_named(fm, "image/int8")["type"], "INT8");
  EXPECT_EQ(tensor_named(fm, "dense")["type"], "FLOAT32");
  for (const auto& code : fm["operator_codes"])
    if (code["builtin_code"] == "QUANTIZE" || code["builtin_code"] == "DEQUANTIZE") {
      EXPECT_EQ(code["version"], 2);
    }

  TinyModel u = tiny_model("uint8", "uint8");
  ASSERT_TRUE(plugin.export_model(u.qgraph, u.params, tmp / "uint8.tflite").ok());
  const json um = decode(tmp / "uint8.tflite", tmp);
  EXPECT_EQ(operator_names(um).front(), "QUANTIZE");
  EXPECT_EQ(operator_names(um).back(), "QUANTIZE");
  EXPECT_EQ(tensor_named(um, "image")["type"], "UINT8");
  EXPECT_EQ(tensor_named(um, "image")["quantization"]["zero_point"], json({0}));  // -128 + 128
  EXPECT_EQ(tensor_named(um, "dense")["quantization"]["zero_point"], json({128}));
}

// ---- failures leave no file -------------------------------------------------------------------------------

TEST(TfliteExporter, AFailedExportLeavesNoFile) {
  ramjet::test::TempDir tmp;
  Plugin plugin;
  TinyModel m = tiny_model();
  const fs::path missing_dir = tmp / "no_such_dir" / "model.tflite";
  const Status s = plugin.export_model(m.qgraph, m.params, missing_dir);
  EXPECT_EQ(s.code, RAMJET_ERR_IO);
  EXPECT_NE(s.message.find("no_such_dir"), std::string::npos) << s.message;
  EXPECT_FALSE(fs::exists(tmp / "no_such_dir"));

  // Padding that is neither SAME nor VALID cannot be written; an earlier file at the path stays as it was.
  const fs::path path = tmp / "model.tflite";
  ramjet::test::write_file(path, "previous");
  m.qgraph["nodes"][0]["attrs"]["padding"] = {0, 2, 0, 2};
  const Status bad = plugin.export_model(m.qgraph, m.params, path);
  EXPECT_EQ(bad.code, RAMJET_ERR_UNSUPPORTED);
  EXPECT_NE(bad.message.find("layer 'conv2d' (op conv2d): padding [0, 2, 0, 2] is neither SAME"), std::string::npos)
      << bad.message;
  EXPECT_EQ(ramjet::test::read_file(path), "previous");
  EXPECT_EQ(leftovers(tmp), "");

  // Dynamic range has float32 activations only: an int8 interface is refused before anything is written.
  TinyModel dynamic = tiny_model();
  dynamic.qgraph["quantization"]["mode"] = "dynamic_range";
  const Status interface = plugin.export_model(dynamic.qgraph, dynamic.params, tmp / "dynamic.tflite");
  EXPECT_EQ(interface.code, RAMJET_ERR_UNSUPPORTED);
  EXPECT_NE(interface.message.find("float32 interface only"), std::string::npos) << interface.message;
  EXPECT_FALSE(fs::exists(tmp / "dynamic.tflite"));

  TinyModel unknown = tiny_model();
  unknown.qgraph["quantization"]["mode"] = "float16";
  const Status mode = plugin.export_model(unknown.qgraph, unknown.params, tmp / "float16.tflite");
  EXPECT_EQ(mode.code, RAMJET_ERR_UNSUPPORTED);
  EXPECT_NE(mode.message.find("'float16'"), std::string::npos) << mode.message;
  EXPECT_FALSE(fs::exists(tmp / "float16.tflite"));
}

// ---- LiteRT runs what was written -------------------------------------------------------------------------

// Why a LiteRT test skips.
std::string litert_missing() {
  std::ostringstream why;
  why << "LiteRT (ai-edge-litert) is not installed in " << ramjet::test::venv_python() << "; ./dev bench installs it";
  return why.str();
}

// Loads the model in LiteRT, optionally resizes the batch, feeds `input` (repeated per example) and returns
// {"input_dtype", "output_shape", "output"}; skips the test when LiteRT is not installed.
std::optional<json> run_litert(const fs::path& model, const std::vector<double>& input, int batch,
                               const ramjet::test::TempDir& tmp) {
  const fs::path python = ramjet::test::venv_python();
  if (!fs::exists(python) || ramjet::test::run(ramjet::test::quote(python.string()) +
                                               " -c 'import ai_edge_litert.interpreter'").exit_code != 0)
    return std::nullopt;
  const fs::path script = tmp / "run_litert.py";
  ramjet::test::write_file(script, R"(import json, sys
import numpy as np
from ai_edge_litert.interpreter import Interpreter
model, values, batch = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
it = Interpreter(model_path=model)
inp = it.get_input_details()[0]
if batch != 1:
    it.resize_tensor_input(inp["index"], [batch] + list(inp["shape"][1:]))
it.allocate_tensors()
inp = it.get_input_details()[0]
out = it.get_output_details()[0]
x = np.array(values * batch, dtype=inp["dtype"]).reshape(inp["shape"])
it.set_tensor(inp["index"], x)
it.invoke()
y = it.get_tensor(out["index"])
print("RESULT " + json.dumps({"input_dtype": str(inp["dtype"]), "output_dtype": str(y.dtype),
                              "output_shape": list(y.shape), "output": [float(v) for v in y.flatten()]}))
)");
  const auto r = ramjet::test::run(ramjet::test::quote(python.string()) + " " + ramjet::test::quote(script.string()) + " " +
                                   ramjet::test::quote(model.string()) + " " + ramjet::test::quote(json(input).dump()) + " " +
                                   std::to_string(batch));
  const auto at = r.output.find("RESULT ");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  if (at == std::string::npos) {
    ADD_FAILURE() << "LiteRT printed no result:\n" << r.output;
    return json::object();
  }
  return json::parse(r.output.substr(at + 7));
}

std::vector<float> test_image() {
  std::vector<float> image(16);
  for (int i = 0; i < 16; ++i) image[static_cast<size_t>(i)] = static_cast<float>((i * 7) % 16) / 15.0f;
  return image;
}

TEST(TfliteExporter, LiteRtLoadsAllocatesAndRunsTheInt8Model) {
  ramjet::test::TempDir tmp;
  Plugin plugin;
  TinyModel m = tiny_model();
  const fs::path path = tmp / "tiny.tflite";
  ASSERT_TRUE(plugin.export_model(m.qgraph, m.params, path).ok());
  std::vector<double> q;
  for (float v : test_image()) q.push_back(std::clamp(std::round(v * 255.0f) - 128.0f, -128.0f, 127.0f));
  const auto result = run_litert(path, q, 1, tmp);
  if (!result) GTEST_SKIP() << litert_missing();
  EXPECT_EQ((*result)["input_dtype"], "<class 'numpy.int8'>");
  EXPECT_EQ((*result)["output_dtype"], "int8");
  EXPECT_EQ((*result)["output_shape"], json({1, 3}));
  // Batch resizing works because the signatures carry -1.
  const auto batched = run_litert(path, q, 2, tmp);
  EXPECT_EQ((*batched)["output_shape"], json({2, 3}));
}

TEST(TfliteExporter, LiteRtFloatInterfaceMatchesTheFloatReference) {
  ramjet::test::TempDir tmp;
  Plugin plugin;
  TinyModel m = tiny_model("float32", "float32");
  const fs::path path = tmp / "tiny_float.tflite";
  ASSERT_TRUE(plugin.export_model(m.qgraph, m.params, path).ok());
  const std::vector<float> image = test_image();
  const auto result = run_litert(path, std::vector<double>(image.begin(), image.end()), 1, tmp);
  if (!result) GTEST_SKIP() << litert_missing();
  ASSERT_EQ((*result)["output_shape"], json({1, 3}));
  const std::vector<float> expected = tiny_reference(m, image);
  // Activations are rounded to int8 on the way (input 1/255, conv 0.02, output 0.05): a few steps of slack.
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR((*result)["output"][i].get<float>(), expected[i], 0.15) << i;
}

// x [4, 4, 2] → depthwise 3×3 SAME (relu6, no bias) → global_avg_pool → dense (3) → softmax, in float, with
// the depthwise kernel [3, 3, 1, 2] given and the dense layer's fixed.
struct DepthwiseModel {
  json graph;
  Example params;
};

DepthwiseModel depthwise_softmax_model(const std::vector<float>& depthwise_kernel) {
  DepthwiseModel m;
  m.graph = {
      {"inputs", {{{"name", "x"}, {"shape", {4, 4, 2}}, {"dtype", "float32"}}}},
      {"nodes",
       {{{"name", "depthwise"}, {"op", "conv2d"}, {"inputs", {"x"}}, {"shape", {4, 4, 2}},
         {"attrs", {{"filters", 2}, {"kernel", {3, 3}}, {"strides", {1, 1}}, {"padding", {1, 1, 1, 1}}, {"dilation", {1, 1}},
                    {"groups", 2}, {"use_bias", false}, {"activation", "relu6"}}},
         {"params", {{"kernel", "depthwise/kernel"}}}},
        {{"name", "gap"}, {"op", "global_avg_pool"}, {"inputs", {"depthwise"}}, {"shape", {2}}, {"attrs", json::object()}},
        {{"name", "dense"}, {"op", "dense"}, {"inputs", {"gap"}}, {"shape", {3}},
         {"attrs", {{"units", 3}, {"use_bias", true}, {"activation", "linear"}}},
         {"params", {{"kernel", "dense/kernel"}, {"bias", "dense/bias"}}}},
        {{"name", "softmax"}, {"op", "softmax"}, {"inputs", {"dense"}}, {"shape", {3}}, {"attrs", json::object()}}}},
      {"outputs", {"softmax"}},
      {"params", {{"depthwise/kernel", {{"shape", {3, 3, 1, 2}}}}, {"dense/kernel", {{"shape", {2, 3}}}}, {"dense/bias", {{"shape", {3}}}}}}};
  put_typed(m.params, "depthwise/kernel", {3, 3, 1, 2}, depthwise_kernel);
  put_typed(m.params, "dense/kernel", {2, 3}, std::vector<float>{1.0f, -1.0f, 0.5f, 0.25f, 0.75f, -0.5f});
  put_typed(m.params, "dense/bias", {3}, std::vector<float>{0.1f, 0.0f, -0.1f});
  return m;
}

TEST(TfliteExporter, QuantizerOutputWithDepthwiseGlobalPoolAndSoftmaxRunsInLiteRt) {
  // x [4, 4, 2] → depthwise 3×3 SAME → global_avg_pool → dense (3) → softmax, quantized by the int8 quantizer.
  std::vector<float> dw(18);
  for (size_t i = 0; i < dw.size(); ++i) dw[i] = 0.1f * static_cast<float>(static_cast<int>(i % 5) - 2);
  DepthwiseModel m = depthwise_softmax_model(dw);
  Example qparams;
  Plugin plugin;
  for (const auto& [name, lo, hi] : std::vector<std::tuple<std::string, float, float>>{
           {"x", 0.0f, 1.0f}, {"depthwise", 0.0f, 6.0f}, {"gap", 0.0f, 6.0f}, {"dense", -4.0f, 4.0f}})
    ASSERT_TRUE(plugin.observe(name, {lo, hi}).ok());
  json qgraph;
  const Status q = plugin.quantize(m.graph, m.params, qgraph, qparams);
  ASSERT_TRUE(q.ok()) << q.message;
  ramjet::test::TempDir tmp;
  const fs::path path = tmp / "dw.tflite";
  const Status s = plugin.export_model(qgraph, qparams, path);
  ASSERT_TRUE(s.ok()) << s.message;
  const json model = decode(path, tmp);
  EXPECT_EQ(operator_names(model),
            (std::vector<std::string>{"DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "RESHAPE", "FULLY_CONNECTED", "SOFTMAX"}));
  const json& kernel = tensor_named(model, "depthwise/kernel");
  EXPECT_EQ(kernel["shape"], json({1, 3, 3, 2}));
  EXPECT_EQ(kernel["quantization"].value("quantized_dimension", 0), 3);
  EXPECT_EQ(model["subgraphs"][0]["operators"][0]["builtin_options"]["fused_activation_function"], "RELU6");

  std::vector<double> input(32);
  for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<double>(i % 9) * 20 - 100;
  const auto result = run_litert(path, input, 1, tmp);
  if (!result) GTEST_SKIP() << litert_missing();
  ASSERT_EQ((*result)["output_shape"], json({1, 3}));
  double sum = 0;  // softmax probabilities, int8 at (1/256, -128)
  for (const auto& v : (*result)["output"]) sum += (v.get<double>() + 128) / 256.0;
  EXPECT_NEAR(sum, 1.0, 0.02);
}

// ---- dynamic range: float activations, int8 kernels ---------------------------------------------------------

// image [8, 8, 1] → conv2d 3×3 SAME (8 filters) → relu → max_pool 2×2 → flatten (128) → dense (200, no bias):
// dense-dominated, as the size rule needs; the relu node is fused into the conv by the quantizer.
struct DynamicModel {
  json graph;
  Example params;
};

DynamicModel dynamic_model() {
  DynamicModel m;
  m.graph = {
      {"inputs", {{{"name", "image"}, {"shape", {8, 8, 1}}, {"dtype", "float32"}}}},
      {"nodes",
       {{{"name", "conv2d"}, {"op", "conv2d"}, {"inputs", {"image"}}, {"shape", {8, 8, 8}},
         {"attrs", {{"filters", 8}, {"kernel", {3, 3}}, {"strides", {1, 1}}, {"padding", {1, 1, 1, 1}}, {"dilation", {1, 1}},
                    {"groups", 1}, {"use_bias", true}, {"activation", "linear"}}},
         {"params", {{"kernel", "conv2d/kernel"}, {"bias", "conv2d/bias"}}}},
        {{"name", "relu"}, {"op", "activation"}, {"inputs", {"conv2d"}}, {"shape", {8, 8, 8}}, {"attrs", {{"activation", "relu"}}}},
        {{"name", "max_pool"}, {"op", "max_pool"}, {"inputs", {"relu"}}, {"shape", {4, 4, 8}},
         {"attrs", {{"pool", {2, 2}}, {"strides", {2, 2}}, {"padding", {0, 0, 0, 0}}}}},
        {{"name", "flatten"}, {"op", "flatten"}, {"inputs", {"max_pool"}}, {"shape", {128}}, {"attrs", json::object()}},
        {{"name", "dense"}, {"op", "dense"}, {"inputs", {"flatten"}}, {"shape", {200}},
         {"attrs", {{"units", 200}, {"use_bias", false}, {"activation", "linear"}}},
         {"params", {{"kernel", "dense/kernel"}}}}}},
      {"outputs", {"dense"}},
      {"params", {{"conv2d/kernel", {{"shape", {3, 3, 1, 8}}}}, {"conv2d/bias", {{"shape", {8}}}},
                  {"dense/kernel", {{"shape", {128, 200}}}}}}};
  // Deterministic, sign-mixed values with a different range per conv filter (per-channel scales differ).
  std::vector<float> kernel(72), bias(8), dense(128 * 200);
  for (size_t i = 0; i < kernel.size(); ++i)
    kernel[i] = 0.05f * static_cast<float>(1 + i % 8) * std::sin(0.7f * static_cast<float>(i) + 0.3f);
  for (size_t c = 0; c < bias.size(); ++c) bias[c] = 0.02f * static_cast<float>(c) - 0.07f;
  for (size_t i = 0; i < dense.size(); ++i) dense[i] = 0.1f * std::cos(0.37f * static_cast<float>(i) + 0.1f * static_cast<float>(i % 7));
  put_typed(m.params, "conv2d/kernel", {3, 3, 1, 8}, kernel);
  put_typed(m.params, "conv2d/bias", {8}, bias);
  put_typed(m.params, "dense/kernel", {128, 200}, dense);
  return m;
}

// int8 values × their scales (per channel along the innermost IR axis, or one scale).
std::vector<float> dequantized(Example& qparams, const json& qgraph, const std::string& name) {
  const std::vector<int8_t> q = values_of<int8_t>(qparams, name);
  const auto scales = qgraph["quantization"]["tensors"][name]["scale"].get<std::vector<float>>();
  std::vector<float> out(q.size());
  for (size_t i = 0; i < q.size(); ++i) out[i] = static_cast<float>(q[i]) * scales[i % scales.size()];
  return out;
}

// The float computation of dynamic_model() with the given (dequantized) weights.
std::vector<float> dynamic_reference(const std::vector<float>& kernel, const std::vector<float>& bias,
                                     const std::vector<float>& dense, const std::vector<float>& image) {
  const std::vector<float> pooled = max_pool_2x2(conv3x3_same_relu(image, 8, 8, kernel, bias), 8, 8);
  std::vector<float> out(200, 0.0f);
  for (size_t o = 0; o < 200; ++o)
    for (size_t i = 0; i < 128; ++i) out[o] += pooled[i] * dense[i * 200 + o];
  return out;
}

std::vector<float> dynamic_image() {
  std::vector<float> image(64);
  for (size_t i = 0; i < image.size(); ++i) image[i] = static_cast<float>((i * 29) % 64) / 63.0f;
  return image;
}

TEST(TfliteExporter, DynamicRangeWritesInt8KernelsAndFloatEverythingElse) {
  ramjet::test::TempDir tmp;
  Plugin plugin(json{{"mode", "dynamic_range"}});
  DynamicModel m = dynamic_model();
  Example qparams;
  json qgraph;
  const Status q = plugin.quantize(m.graph, m.params, qgraph, qparams);  // dynamic range needs no calibration
  ASSERT_TRUE(q.ok()) << q.message;
  ASSERT_EQ(qgraph["quantization"]["mode"], "dynamic_range");
  const fs::path path = tmp / "dynamic.tflite";
  const Status s = plugin.export_model(qgraph, qparams, path);
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_EQ(leftovers(tmp), "");

  const json model = decode(path, tmp);
  EXPECT_EQ(operator_names(model), (std::vector<std::string>{"CONV_2D", "MAX_POOL_2D", "RESHAPE", "FULLY_CONNECTED"}));
  // Hybrid kernels: per-channel CONV_2D 5, FULLY_CONNECTED with asymmetric input quantization 9; float ops 1.
  const std::map<std::string, int> versions = {{"CONV_2D", 5}, {"MAX_POOL_2D", 1}, {"RESHAPE", 1}, {"FULLY_CONNECTED", 9}};
  for (const auto& code : model["operator_codes"]) EXPECT_EQ(code["version"], versions.at(code["builtin_code"])) << code.dump();
  const json& ops = model["subgraphs"][0]["operators"];
  EXPECT_EQ(ops[0]["builtin_options"]["fused_activation_function"], "RELU");
  EXPECT_EQ(ops[3]["builtin_options"]["asymmetric_quantize_inputs"], true);
  ASSERT_EQ(ops[3]["inputs"].size(), 3u);  // a zero float bias for the bias-less dense

  for (const auto& t : model["subgraphs"][0]["tensors"]) {
    const std::string name = t["name"];
    if (name == "conv2d/kernel" || name == "dense/kernel") {
      EXPECT_EQ(t.value("type", std::string("FLOAT32")), "INT8") << name;
    } else {
      // flatc leaves out fields at their default (FLOAT32 is type 0) unless asked for them.
      EXPECT_EQ(t.value("type", std::string("FLOAT32")), name == "flatten/shape" ? "INT32" : "FLOAT32") << name;
      const bool quantized = t.contains("quantization") && !t["quantization"].value("scale", json::array()).empty();
      EXPECT_FALSE(quantized) << name << " carries quantization parameters";
    }
  }
  const json& kernel = tensor_named(model, "conv2d/kernel");  // OHWI, per channel on axis 0
  EXPECT_EQ(kernel["shape"], json({8, 3, 3, 1}));
  EXPECT_EQ(kernel["quantization"].value("quantized_dimension", 0), 0);
  EXPECT_EQ(kernel["quantization"]["scale"].size(), 8u);
  EXPECT_EQ(kernel["quantization"]["zero_point"], json(std::vector<int>(8, 0)));
  const json& dense = tensor_named(model, "dense/kernel");  // [out, in], per tensor
  EXPECT_EQ(dense["shape"], json({200, 128}));
  EXPECT_EQ(dense["quantization"]["scale"].size(), 1u);
  EXPECT_EQ(dense["quantization"]["zero_point"], json({0}));
  const json& dense_bias = tensor_named(model, "dense/bias");
  const auto bias_bytes = model["buffers"][dense_bias["buffer"].get<size_t>()]["data"].get<std::vector<uint8_t>>();
  EXPECT_EQ(bias_bytes, std::vector<uint8_t>(200 * sizeof(float), 0));
  EXPECT_EQ(tensor_named(model, "image")["shape_signature"], json({-1, 8, 8, 1}));
  EXPECT_EQ(tensor_named(model, "dense")["shape"], json({1, 200}));
  ASSERT_EQ(model["metadata"].size(), 1u);
  EXPECT_EQ(model["metadata"][0]["name"], "ramjet_qgraph");

  // Weights-only int8 is about a quarter of the float weights, the qgraph metadata and float biases included.
  const double float_weight_bytes = (72 + 8 + 128 * 200) * sizeof(float);
  EXPECT_LE(static_cast<double>(fs::file_size(path)), 0.30 * float_weight_bytes) << fs::file_size(path) << " bytes";
}

TEST(TfliteExporter, LiteRtRunsTheDynamicRangeModelCloseToTheFloatReference) {
  ramjet::test::TempDir tmp;
  Plugin plugin(json{{"mode", "dynamic_range"}});
  DynamicModel m = dynamic_model();
  Example qparams;
  json qgraph;
  ASSERT_TRUE(plugin.quantize(m.graph, m.params, qgraph, qparams).ok());
  const fs::path path = tmp / "dynamic.tflite";
  ASSERT_TRUE(plugin.export_model(qgraph, qparams, path).ok());
  const std::vector<float> image = dynamic_image();
  const auto result = run_litert(path, std::vector<double>(image.begin(), image.end()), 2, tmp);
  if (!result) GTEST_SKIP() << litert_missing();
  EXPECT_EQ((*result)["input_dtype"], "<class 'numpy.float32'>");
  EXPECT_EQ((*result)["output_dtype"], "float32");
  ASSERT_EQ((*result)["output_shape"], json({2, 200}));
  // The reference uses the dequantized weights: what is left is LiteRT quantizing the activations on the fly.
  const std::vector<float> expected = dynamic_reference(dequantized(qparams, qgraph, "conv2d/kernel"),
                                                        values_of<float>(qparams, "conv2d/bias"),
                                                        dequantized(qparams, qgraph, "dense/kernel"), image);
  const auto [lo, hi] = std::minmax_element(expected.begin(), expected.end());
  const double tolerance = 0.03 * (*hi - *lo);
  ASSERT_GT(tolerance, 0.0);
  double worst = 0;
  for (size_t b = 0; b < 2; ++b)
    for (size_t i = 0; i < expected.size(); ++i) {
      const double got = (*result)["output"][b * expected.size() + i].get<double>();
      worst = std::max(worst, std::abs(got - expected[i]));
      EXPECT_NEAR(got, expected[i], tolerance) << "example " << b << ", output " << i;
    }
  RecordProperty("worst_abs_error", std::to_string(worst));
}

TEST(TfliteExporter, DynamicRangeDepthwiseGlobalPoolAndSoftmaxRunInLiteRt) {
  // x [4, 4, 2] → depthwise 3×3 SAME → global_avg_pool → dense (3) → softmax, as the quantizer writes it.
  std::vector<float> dw(18);
  for (size_t i = 0; i < dw.size(); ++i) dw[i] = 0.1f * static_cast<float>(static_cast<int>(i % 5) - 2) * (i % 2 ? 2.0f : 1.0f);
  DepthwiseModel m = depthwise_softmax_model(dw);
  Example qparams;
  Plugin plugin(json{{"mode", "dynamic_range"}});
  json qgraph;
  const Status q = plugin.quantize(m.graph, m.params, qgraph, qparams);
  ASSERT_TRUE(q.ok()) << q.message;
  ramjet::test::TempDir tmp;
  const fs::path path = tmp / "dw.tflite";
  const Status s = plugin.export_model(qgraph, qparams, path);
  ASSERT_TRUE(s.ok()) << s.message;
  const json model = decode(path, tmp);
  EXPECT_EQ(operator_names(model),
            (std::vector<std::string>{"DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "RESHAPE", "FULLY_CONNECTED", "SOFTMAX"}));
  for (const auto& code : model["operator_codes"])
    if (code["builtin_code"] == "DEPTHWISE_CONV_2D") {
      EXPECT_EQ(code["version"], 6);  // hybrid, per channel
    }
  const json& kernel = tensor_named(model, "depthwise/kernel");
  EXPECT_EQ(kernel["type"], "INT8");
  EXPECT_EQ(kernel["shape"], json({1, 3, 3, 2}));
  EXPECT_EQ(kernel["quantization"].value("quantized_dimension", 0), 3);
  EXPECT_EQ(kernel["quantization"]["scale"].size(), 2u);
  EXPECT_EQ(tensor_named(model, "depthwise/bias")["type"], "FLOAT32");
  EXPECT_EQ(tensor_named(model, "gap/pool")["type"], "FLOAT32");
  EXPECT_EQ(tensor_named(model, "softmax")["type"], "FLOAT32");

  std::vector<double> input(32);
  for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<double>(i % 9) / 8.0;
  const auto result = run_litert(path, input, 1, tmp);
  if (!result) GTEST_SKIP() << litert_missing();
  ASSERT_EQ((*result)["output_shape"], json({1, 3}));
  double sum = 0;
  for (const auto& v : (*result)["output"]) sum += v.get<double>();
  EXPECT_NEAR(sum, 1.0, 1e-5);
}

TEST(TfliteExporter, DynamicRangeNamesANodeWithNoTfliteForm) {
  Plugin plugin(json{{"mode", "dynamic_range"}});
  DynamicModel m = dynamic_model();
  m.graph["nodes"].push_back({{"name", "gelu"}, {"op", "activation"}, {"inputs", {"dense"}}, {"shape", {200}},
                              {"attrs", {{"activation", "gelu"}}}});
  m.graph["outputs"] = {"gelu"};
  Example qparams;
  json qgraph;
  ASSERT_TRUE(plugin.quantize(m.graph, m.params, qgraph, qparams).ok());
  ramjet::test::TempDir tmp;
  const Status s = plugin.export_model(qgraph, qparams, tmp / "gelu.tflite");
  EXPECT_EQ(s.code, RAMJET_ERR_UNSUPPORTED);
  EXPECT_NE(s.message.find("layer 'gelu' (op activation)"), std::string::npos) << s.message;
  EXPECT_FALSE(fs::exists(tmp / "gelu.tflite"));
}

}  // namespace

// ---- the shape ops of image-to-image models ---------------------------------------------------------------

namespace {

// x [4, 4, 8] → zero_padding2d [1, 0, 2, 1] → cropping2d [0, 1, 1, 2] (x shifted down and right by one) →
// concat with x on the rows (axis -3) → depth_to_space 2 → [16, 8, 2]. No parameters: every op only moves values.
json image_shape_graph() {
  return {{"inputs", {{{"name", "x"}, {"shape", {4, 4, 8}}, {"dtype", "float32"}}}},
          {"nodes",
           {{{"name", "pad"}, {"op", "zero_padding2d"}, {"inputs", {"x"}}, {"shape", {5, 7, 8}},
             {"attrs", {{"padding", {1, 0, 2, 1}}}}},
            {{"name", "crop"}, {"op", "cropping2d"}, {"inputs", {"pad"}}, {"shape", {4, 4, 8}},
             {"attrs", {{"cropping", {0, 1, 1, 2}}}}},
            {{"name", "cat"}, {"op", "concat"}, {"inputs", {"crop", "x"}}, {"shape", {8, 4, 8}}, {"attrs", {{"axis", -3}}}},
            {{"name", "d2s"}, {"op", "depth_to_space"}, {"inputs", {"cat"}}, {"shape", {16, 8, 2}},
             {"attrs", {{"block_size", 2}}}}}},
          {"outputs", {"d2s"}},
          {"params", json::object()}};
}

std::vector<float> image_shape_input() {
  std::vector<float> x(4 * 4 * 8);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 201) / 100.0f - 1.0f;
  return x;
}

// The graph's output computed by hand (NHWC, tf.nn.depth_to_space's DCR order).
std::vector<float> image_shape_reference(const std::vector<float>& x) {
  auto X = [&](int h, int w, int c) { return x[static_cast<size_t>((h * 4 + w) * 8 + c)]; };
  auto cat = [&](int h, int w, int c) {
    if (h >= 4) return X(h - 4, w, c);
    return h >= 1 && w >= 1 ? X(h - 1, w - 1, c) : 0.0f;  // the crop of the padded image
  };
  std::vector<float> out(16 * 8 * 2);
  for (int h = 0; h < 8; ++h)
    for (int w = 0; w < 4; ++w)
      for (int c = 0; c < 8; ++c) {
        const int block = c / 2, bi = block / 2, bj = block % 2;
        out[static_cast<size_t>(((2 * h + bi) * 8 + 2 * w + bj) * 2 + c % 2)] = cat(h, w, c);
      }
  return out;
}

}  // namespace

TEST(TfliteExporter, PadSliceConcatOnRowsAndDepthToSpaceRunInLiteRt) {
  const std::vector<float> x = image_shape_input();
  const std::vector<float> want = image_shape_reference(x);
  for (const char* mode : {"full_integer", "dynamic_range"}) {
    SCOPED_TRACE(mode);
    const bool full = std::string(mode) == "full_integer";
    Plugin plugin(full ? json{{"input_type", "float32"}, {"output_type", "float32"}} : json{{"mode", mode}});
    if (full) {
      ASSERT_TRUE(plugin.observe("x", {-1.0f, 1.0f}).ok());
      ASSERT_TRUE(plugin.observe("cat", {-1.0f, 1.0f}).ok());
    }
    Example params, qparams;
    json qgraph;
    const Status q = plugin.quantize(image_shape_graph(), params, qgraph, qparams);
    ASSERT_TRUE(q.ok()) << q.message;
    ramjet::test::TempDir tmp;
    const fs::path path = tmp / "shapes.tflite";
    const Status s = plugin.export_model(qgraph, qparams, path);
    ASSERT_TRUE(s.ok()) << s.message;

    const json model = decode(path, tmp);
    std::vector<std::string> ops = operator_names(model);
    const std::vector<std::string> moves{"PAD", "SLICE", "CONCATENATION", "DEPTH_TO_SPACE"};
    std::vector<std::string> want_ops = moves;
    if (full) {
      want_ops.insert(want_ops.begin(), "QUANTIZE");
      want_ops.push_back("DEQUANTIZE");
    }
    EXPECT_EQ(ops, want_ops);
    for (const auto& op : model["subgraphs"][0]["operators"]) {
      const std::string name = model["operator_codes"][op["opcode_index"].get<size_t>()]["builtin_code"];
      if (name == "CONCATENATION") {
        EXPECT_EQ(op["builtin_options"]["axis"], 1);  // the rows, batch counted
      }
      if (name == "DEPTH_TO_SPACE") {
        EXPECT_EQ(op["builtin_options"]["block_size"], 2);
      }
    }
    EXPECT_EQ(tensor_named(model, "pad/paddings")["shape"], json({4, 2}));

    const auto result = run_litert(path, std::vector<double>(x.begin(), x.end()), 2, tmp);
    if (!result) GTEST_SKIP() << litert_missing();
    ASSERT_EQ((*result)["output_shape"], json({2, 16, 8, 2}));
    // Full integer rounds each value to a step of 2/255 once (every op keeps the input's parameters).
    const double tolerance = full ? 1.0 / 255 + 1e-6 : 1e-6;
    for (size_t n = 0; n < 2; ++n)
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR((*result)["output"][n * want.size() + i].get<double>(), want[i], tolerance) << n << ", " << i;
  }
}

TEST(TfliteExporter, ConcatOnTheLastAxisKeepsItsTfliteAxis) {
  // The IR's -1 (and a non-negative per-example axis) become TFLite's axis with the batch counted.
  json g = image_shape_graph();
  g["nodes"] = {{{"name", "cat"}, {"op", "concat"}, {"inputs", {"x", "x"}}, {"shape", {4, 4, 16}}, {"attrs", {{"axis", -1}}}}};
  g["outputs"] = {"cat"};
  for (const auto& [axis, shape, want] : std::vector<std::tuple<int, Shape, int>>{
           {-1, {4, 4, 16}, 3}, {1, {4, 8, 8}, 2}, {-2, {4, 8, 8}, 2}}) {
    SCOPED_TRACE(axis);
    g["nodes"][0]["attrs"]["axis"] = axis;
    g["nodes"][0]["shape"] = shape;
    Plugin plugin(json{{"mode", "dynamic_range"}});
    Example params, qparams;
    json qgraph;
    ASSERT_TRUE(plugin.quantize(g, params, qgraph, qparams).ok());
    ramjet::test::TempDir tmp;
    ASSERT_TRUE(plugin.export_model(qgraph, qparams, tmp / "cat.tflite").ok());
    const json model = decode(tmp / "cat.tflite", tmp);
    EXPECT_EQ(model["subgraphs"][0]["operators"][0]["builtin_options"]["axis"], want);
  }
  g["nodes"][0]["attrs"]["axis"] = 3;
  Plugin plugin(json{{"mode", "dynamic_range"}});
  Example params, qparams;
  json qgraph;
  ASSERT_TRUE(plugin.quantize(g, params, qgraph, qparams).ok());
  ramjet::test::TempDir tmp;
  const Status s = plugin.export_model(qgraph, qparams, tmp / "bad.tflite");
  EXPECT_EQ(s.code, RAMJET_ERR_UNSUPPORTED);
  EXPECT_NE(s.message.find("layer 'cat' (op concat): axis 3 is not an axis of"), std::string::npos) << s.message;
  EXPECT_FALSE(fs::exists(tmp / "bad.tflite"));
}
