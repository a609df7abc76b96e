// The exported Fashion-MNIST model, checked by software nobody on this team wrote: LiteRT (the TensorFlow Lite
// runtime) and Arm NN 20.08's TfLiteParser agree with ramjet's own int8 inference, and flatc decodes the file
// against the schema. One model is trained (a third of an epoch) and exported for the whole suite.
#include "ramjet/plan/plan.hpp"
#include "ramjet/train/checkpoint.hpp"
#include "ramjet/deploy/model_export.hpp"
#include "ramjet/plan/pipeline_manifest.hpp"
#include "ramjet/train/trainer.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <set>

using namespace ramjet::core;
using namespace ramjet::test;

namespace {

const char* kManifest = R"({
  "seed": 7,
  "data": {
    "train": {"source": {"type": "idx", "images": "TRAIN_IMAGES", "labels": "TRAIN_LABELS", "num_classes": 10},
              "map": [{"type": "normalize", "scale": 0.00392156862745098}],
              "take": 20000, "cache": "memory", "shuffle": 20000, "batch": 128},
    "eval": {"source": {"type": "idx", "images": "TEST_IMAGES", "labels": "TEST_LABELS", "num_classes": 10},
             "map": [{"type": "normalize", "scale": 0.00392156862745098}], "batch": 256}
  },
  "model": {
    "input": {"image": [28, 28, 1]},
    "layers": [
      {"type": "conv2d", "filters": 32, "kernel": 3, "activation": "relu"},
      {"type": "max_pool", "pool": 2},
      {"type": "conv2d", "filters": 64, "kernel": 3, "activation": "relu"},
      {"type": "max_pool", "pool": 2},
      {"type": "flatten"},
      {"type": "dense", "units": 128, "activation": "relu"},
      {"type": "dense", "units": 10}
    ],
    "loss": {"type": "sparse_softmax_cross_entropy"}
  },
  "train": {"backend": "cpu", "optimizer": {"type": "adam", "learning_rate": 0.002}, "epochs": 1, "threads": 2},
  "export": {"quantizer": "int8", "format": "tflite", "path": "model.tflite",
             "calibration": {"batches": 10, "method": "minmax"}, "input_type": "int8", "output_type": "int8"}
})";

std::string replaced(std::string text, const std::string& key, const std::string& value) {
  text.replace(text.find(key), key.size(), value);
  return text;
}

std::vector<int32_t> read_predictions(const std::filesystem::path& path) {
  const std::string bytes = read_file(path);
  std::vector<int32_t> out(bytes.size() / 4);
  for (size_t i = 0; i < out.size(); ++i) {
    uint32_t v = 0;
    for (int b = 0; b < 4; ++b) v |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i * 4 + b])) << (8 * b);
    out[i] = static_cast<int32_t>(v);
  }
  return out;
}

double agreement(const std::vector<int32_t>& a, const std::vector<int32_t>& b, size_t count) {
  size_t same = 0;
  for (size_t i = 0; i < count; ++i) same += a[i] == b[i];
  return static_cast<double>(same) / static_cast<double>(count);
}

class TfliteEndToEnd : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<TempDir>();
    std::string text = replaced(kManifest, "TRAIN_IMAGES", fashion_mnist("train-images-idx3-ubyte.gz").string());
    text = replaced(text, "TRAIN_LABELS", fashion_mnist("train-labels-idx1-ubyte.gz").string());
    text = replaced(text, "TEST_IMAGES", fashion_mnist("t10k-images-idx3-ubyte.gz").string());
    text = replaced(text, "TEST_LABELS", fashion_mnist("t10k-labels-idx1-ubyte.gz").string());
    write_file(*dir_ / "m.json", text);
    PluginRegistry registry{DiscoveryOptions{{stock_plugin_dir()}, {}, {}}};
    const Plan manifest = require_plan(load_pipeline_manifest(*dir_ / "m.json"), registry);
    Example trained;
    TrainOptions options;
    options.trained_parameters = &trained;
    train_model(manifest, registry, options);
    report_ = export_trained_model(manifest, registry, trained, nullptr, &ramjet_int8_);
  }
  static void TearDownTestSuite() { dir_.reset(); }

  static std::filesystem::path model() { return *dir_ / "model.tflite"; }
  // Runs tests/tools/tflite_predict.py and returns the predictions it wrote; nullopt when the engine itself is
  // not installed (the script's exit code 3).
  static std::optional<std::vector<int32_t>> predict(const std::string& python, const std::string& engine, int limit) {
    const auto out = *dir_ / (engine + ".bin");
    const auto result = run(quote(python) + " " + quote((source_dir() / "tests/tools/tflite_predict.py").string()) +
                            " --engine " + engine + " --model " + quote(model().string()) + " --images " +
                            quote(fashion_mnist("t10k-images-idx3-ubyte.gz").string()) + " --labels " +
                            quote(fashion_mnist("t10k-labels-idx1-ubyte.gz").string()) +
                            (limit > 0 ? " --limit " + std::to_string(limit) : "") + " --out " + quote(out.string()));
    if (result.exit_code == 3) return std::nullopt;
    EXPECT_EQ(result.exit_code, 0) << result.output;
    if (result.exit_code != 0) return std::vector<int32_t>{};
    return read_predictions(out);
  }

  // Why the export report has no ramjet int8 evaluation (the backend could not run int8 inference here: the export
  // then leaves out int8_accuracy and says why in int8_evaluation), or nullopt when it has one.
  static std::optional<std::string> no_ramjet_int8() {
    if (report_.contains("int8_accuracy")) return std::nullopt;
    const auto note = report_.find("int8_evaluation");
    if (note == report_.end()) return "the export report has no int8_accuracy (and no int8_evaluation note)";
    return "ramjet's int8 inference did not run: " + (note->is_string() ? note->get<std::string>() : note->dump());
  }

  static inline std::unique_ptr<TempDir> dir_;
  static inline nlohmann::json report_;
  static inline std::vector<int32_t> ramjet_int8_;
};

}  // namespace

TEST_F(TfliteEndToEnd, ExportReportsAccuraciesAndASmallFile) {
  ASSERT_TRUE(std::filesystem::exists(model()));
  EXPECT_EQ(report_["file_bytes"].get<int64_t>(), static_cast<int64_t>(std::filesystem::file_size(model())));
  EXPECT_GT(report_["fp32_accuracy"].get<double>(), 0.80);  // a third of an epoch: the CNN has learned
  EXPECT_LE(report_["file_bytes"].get<double>(), 0.30 * report_["fp32_weight_bytes"].get<double>());
  std::ifstream f(model(), std::ios::binary);
  char head[8] = {};
  f.read(head, 8);
  EXPECT_EQ(std::string(head + 4, 4), "TFL3");
  for (const auto& entry : std::filesystem::directory_iterator(dir_->path()))
    EXPECT_EQ(entry.path().string().find(".tmp"), std::string::npos) << "a temporary file was left: " << entry.path();
  if (const auto why = no_ramjet_int8()) GTEST_SKIP() << "the file is checked; the int8 accuracy is not: " << *why;
  EXPECT_NEAR(report_["int8_accuracy"].get<double>(), report_["fp32_accuracy"].get<double>(), 0.01);
  ASSERT_EQ(ramjet_int8_.size(), 10000u);
}

TEST_F(TfliteEndToEnd, LiteRTAgreesWithRamjetsInt8Inference) {
  const std::string python = venv_python().string();
  if (run(quote(python) + " -c 'import ai_edge_litert.interpreter'").exit_code != 0)
    GTEST_SKIP() << "LiteRT (ai-edge-litert) is not installed in " << python << "; `./dev test` installs it";
  const auto litert = predict(python, "litert", 0);
  if (!litert) GTEST_SKIP() << "LiteRT cannot run here; `./dev test` installs ai-edge-litert";
  if (const auto why = no_ramjet_int8()) {
    EXPECT_EQ(litert->size(), 10000u);
    GTEST_SKIP() << "LiteRT ran the file; nothing to compare it with: " << *why;
  }
  ASSERT_EQ(litert->size(), ramjet_int8_.size());
  EXPECT_GE(agreement(*litert, ramjet_int8_, litert->size()), 0.995);
}

TEST_F(TfliteEndToEnd, ArmNNAgreesWithRamjetsInt8Inference) {
  if (run("/usr/bin/python3 -c 'import pyarmnn' 2>/dev/null").exit_code != 0)
    GTEST_SKIP() << "Arm NN's Python binding (Debian's python3-pyarmnn) is not installed; `./dev test` installs it";
  // CpuRef is Arm NN's reference backend, one image at a time: a 2,000-image prefix keeps the test short.
  const int limit = 2000;
  const auto armnn = predict("/usr/bin/python3", "armnn", limit);
  if (!armnn) GTEST_SKIP() << "Arm NN's CpuRef backend is missing; `./dev test` installs libarmnn-cpuref-backend22";
  ASSERT_EQ(armnn->size(), static_cast<size_t>(limit));
  if (const auto why = no_ramjet_int8()) GTEST_SKIP() << "Arm NN ran the file; nothing to compare it with: " << *why;
  EXPECT_GE(agreement(*armnn, ramjet_int8_, armnn->size()), 0.995);
}

TEST_F(TfliteEndToEnd, FlatcDecodesTheFileAgainstTheSchema) {
  const auto schema = source_dir() / "third_party/tflite/schema.fbs";
  const auto result = run(std::string(RAMJET_TEST_FLATC) + " --json --strict-json --raw-binary -o " +
                          quote(dir_->path().string()) + " " + quote(schema.string()) + " -- " + quote(model().string()));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto decoded = nlohmann::json::parse(read_file(*dir_ / "model.json"));
  EXPECT_EQ(decoded["version"], 3);
  std::set<std::string> ops;
  for (const auto& code : decoded["operator_codes"]) {
    ASSERT_TRUE(code.contains("deprecated_builtin_code")) << code.dump();
    ops.insert(code.value("builtin_code", std::string("ADD")));
  }
  for (const char* op : {"CONV_2D", "MAX_POOL_2D", "RESHAPE", "FULLY_CONNECTED"}) EXPECT_TRUE(ops.count(op)) << op;
  const auto& graph = decoded["subgraphs"][0];
  EXPECT_EQ(graph["operators"].size(), 7u);  // conv, pool, conv, pool, reshape, dense, dense (relus fused)
  int int8_tensors = 0;
  for (const auto& t : graph["tensors"]) {
    const std::string type = t.value("type", std::string("FLOAT32"));
    EXPECT_TRUE(type == "INT8" || type == "INT32") << "full-integer model with int8 edges: " << t.dump();
    if (type != "INT8") continue;
    ++int8_tensors;
    EXPECT_FALSE(t["quantization"].value("scale", nlohmann::json::array()).empty()) << t.dump();
  }
  EXPECT_GE(int8_tensors, 12);  // 8 activations and 4 weights at least
  EXPECT_TRUE(decoded["buffers"][0].value("data", nlohmann::json::array()).empty()) << "buffer 0 is the empty sentinel";
}
