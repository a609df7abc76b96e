// The model's metrics: their values against TensorFlow's own (tf.image.psnr / tf.image.ssim), the choices the loss
// makes, the declarations refused with their JSON pointer, monitors of val_<metric>, and a regression run end to end
// through the host: its history and report show the metrics (no accuracy), `eval --predictions` writes NumPy and
// PNG files, and the int8 export reports each metric in float32 and int8.
#include "ramjet/model/graph.hpp"
#include "ramjet/plan/plan.hpp"
#include "ramjet/plugin/failure.hpp"
#include "ramjet/plugin/tensor.hpp"
#include "ramjet/train/metrics.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <fstream>

using namespace ramjet::core;
using namespace ramjet::test;
using nlohmann::json;

namespace {

// Two 16×16×2 images and their targets, as /tmp/ref.py in the commit that added this test built them for TensorFlow
// 2.20: a = ((7i + 3j + c) mod 17) / 16, b = a + 0.1 sin(i + 2j + c); a2 = a / 2, b2 = a2 but 0.25 brighter at (8, 8, 0).
struct ImagePair {
  TensorPtr output, target;
};

ImagePair tf_reference_images() {
  const std::array<int64_t, 4> shape{2, 16, 16, 2};
  ImagePair p{make_tensor(DLDataType{kDLFloat, 32, 1}, shape), make_tensor(DLDataType{kDLFloat, 32, 1}, shape)};
  float* a = static_cast<float*>(p.output->dl_tensor.data);
  float* b = static_cast<float*>(p.target->dl_tensor.data);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j)
      for (int c = 0; c < 2; ++c) {
        const int at = (i * 16 + j) * 2 + c, at2 = 512 + at;
        a[at] = static_cast<float>((i * 7 + j * 3 + c) % 17) / 16.0f;
        b[at] = static_cast<float>(static_cast<double>(a[at]) + 0.1 * std::sin(i + 2 * j + c));
        a[at2] = a[at] * 0.5f;
        b[at2] = a[at2] + (i == 8 && j == 8 && c == 0 ? 0.25f : 0.0f);
      }
  return p;
}

double value_of(const MetricValues& values, const std::string& name) {
  for (const auto& [n, v] : values)
    if (n == name) return v;
  ADD_FAILURE() << "no metric " << name;
  return NAN;
}

TEST(Metrics, ImageMetricsMatchTensorFlow) {
  const ImagePair p = tf_reference_images();
  MetricSet metrics(json::parse(R"([
      {"type": "mae", "name": "mae"}, {"type": "mse", "name": "mse"},
      {"type": "psnr", "name": "psnr", "max_val": 1.0},
      {"type": "ssim", "name": "ssim", "max_val": 1.0, "filter_size": 11, "filter_sigma": 1.5, "k1": 0.01, "k2": 0.03}])"));
  metrics.add(p.output->dl_tensor, p.target->dl_tensor, "test");
  const MetricValues v = metrics.values();
  ASSERT_EQ(v.size(), 4u);
  // TensorFlow's values per image, averaged over the two as a Keras metric averages examples.
  EXPECT_NEAR(value_of(v, "mae"), 0.03217887133359909, 1e-6);
  EXPECT_NEAR(value_of(v, "mse"), 0.002560561988502741, 1e-7);
  EXPECT_NEAR(value_of(v, "psnr"), (23.01112174987793 + 39.13389587402344) / 2, 1e-4);
  EXPECT_NEAR(value_of(v, "ssim"), (0.9739823341369629 + 0.9853260517120361) / 2, 1e-5);
}

TEST(Metrics, SsimWindowAndPsnrScaleFollowTheirOptions) {
  const ImagePair p = tf_reference_images();
  MetricSet metrics(json::parse(R"([
      {"type": "psnr", "name": "psnr", "max_val": 2.0},
      {"type": "ssim", "name": "ssim", "max_val": 1.0, "filter_size": 7, "filter_sigma": 1.0, "k1": 0.01, "k2": 0.03}])"));
  // Two batches of one image each: the mean is over examples, however they were batched.
  for (int64_t i = 0; i < 2; ++i) {
    DLTensor out = p.output->dl_tensor, target = p.target->dl_tensor;
    std::array<int64_t, 4> one{1, 16, 16, 2};
    out.shape = target.shape = one.data();
    out.byte_offset = target.byte_offset = static_cast<uint64_t>(i * 512 * 4);
    metrics.add(out, target, "test");
  }
  const MetricValues v = metrics.values();
  EXPECT_NEAR(value_of(v, "psnr"), (29.031721115112305 + 45.15449523925781) / 2, 1e-4);
  EXPECT_NEAR(value_of(v, "ssim"), (0.9737440347671509 + 0.9945974349975586) / 2, 1e-5);
}

TEST(Metrics, AnExactImageCountsAsAHundredDecibels) {
  const ImagePair p = tf_reference_images();
  MetricSet metrics(json::parse(R"([{"type": "psnr", "name": "psnr", "max_val": 1.0}])"));
  metrics.add(p.output->dl_tensor, p.output->dl_tensor, "test");
  EXPECT_EQ(value_of(metrics.values(), "psnr"), 100.0);
}

TEST(Metrics, AccuracyAndTopKCountTiesForTheLabel) {
  const std::array<int64_t, 2> shape{3, 4};
  TensorPtr logits = make_tensor(DLDataType{kDLFloat, 32, 1}, shape);
  const std::array<int64_t, 1> n{3};
  TensorPtr labels = make_tensor(DLDataType{kDLInt, 32, 1}, n);
  const float rows[12] = {0.1f, 0.9f, 0.5f, 0.2f,   // label 2: second highest
                          1.0f, 1.0f, 0.0f, 0.0f,   // label 1: tied for the top (argmax picks class 0)
                          0.0f, 0.1f, 0.2f, 0.3f};  // label 0: lowest
  std::copy(rows, rows + 12, static_cast<float*>(logits->dl_tensor.data));
  const int32_t truth[3] = {2, 1, 0};
  std::copy(truth, truth + 3, static_cast<int32_t*>(labels->dl_tensor.data));
  MetricSet metrics(json::parse(R"([{"type": "accuracy", "name": "accuracy"},
                                    {"type": "top_k_accuracy", "name": "top_2_accuracy", "k": 2}])"));
  metrics.add(logits->dl_tensor, labels->dl_tensor, "test");
  EXPECT_DOUBLE_EQ(value_of(metrics.values(), "accuracy"), 0.0);
  EXPECT_DOUBLE_EQ(value_of(metrics.values(), "top_2_accuracy"), 2.0 / 3.0);
}

TEST(Metrics, ValueMetricsRefuseTargetsOfAnotherShape) {
  const ImagePair p = tf_reference_images();
  const std::array<int64_t, 2> shape{2, 512};
  TensorPtr flat = make_tensor(DLDataType{kDLFloat, 32, 1}, shape);
  MetricSet metrics(json::parse(R"([{"type": "mae", "name": "mae"}])"));
  try {
    metrics.add(p.output->dl_tensor, flat->dl_tensor, "m.json#/data/eval");
    FAIL() << "expected a refusal";
  } catch (const RuntimeFailure& e) {
    EXPECT_NE(std::string(e.what()).find("m.json#/data/eval"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[2, 512]"), std::string::npos) << e.what();
  }
}

TEST(Metrics, WhichWayIsBetter) {
  for (const char* up : {"accuracy", "val_accuracy", "val_top_5_accuracy", "val_psnr", "ssim"})
    EXPECT_TRUE(metric_is_maximized(up)) << up;
  for (const char* down : {"loss", "val_loss", "val_mae", "mse"}) EXPECT_FALSE(metric_is_maximized(down)) << down;
}

// ---- the model section's `metrics` ----

json image_model(const json& extra = json::object()) {
  json model = {{"input", {{"image", {16, 16, 1}}}},
                {"layers", {{{"type", "conv2d"}, {"filters", 1}, {"kernel", 3}, {"padding", "same"}}}},
                {"loss", {{"type", "mse"}}}};
  for (const auto& [k, v] : extra.items()) model[k] = v;
  return model;
}

json metric_names(const Graph& g) {
  json names = json::array();
  for (const auto& m : g.ir["metrics"]) names.push_back(m["name"]);
  return names;
}

TEST(ModelMetrics, TheLossChoosesThemWhenNoneAreDeclared) {
  const Origin origin{"m.json"};
  EXPECT_EQ(metric_names(build_graph(image_model(), origin)), json({"mae", "psnr"}));
  json classifier = {{"input", {{"image", {4}}}},
                     {"layers", {{{"type", "dense"}, {"units", 3}}}},
                     {"loss", {{"type", "sparse_softmax_cross_entropy"}}}};
  EXPECT_EQ(metric_names(build_graph(classifier, origin)), json({"accuracy"}));
  json vector_regression = {{"input", {{"x", {4}}}}, {"layers", {{{"type", "dense"}, {"units", 2}}}}, {"loss", {{"type", "l1"}}}};
  EXPECT_EQ(metric_names(build_graph(vector_regression, origin)), json({"mae"}));
}

TEST(ModelMetrics, DeclaredMetricsKeepTheirOrderAndOptions) {
  const Graph g = build_graph(
      image_model({{"metrics", {"mse", {{"type", "ssim"}, {"filter_size", 7}}, {{"type", "psnr"}, {"max_val", 255}}}}}),
      Origin{"m.json"});
  EXPECT_EQ(metric_names(g), json({"mse", "ssim", "psnr"}));
  EXPECT_EQ(g.ir["metrics"][1]["filter_size"], 7);
  EXPECT_EQ(g.ir["metrics"][1]["filter_sigma"], 1.5);
  EXPECT_EQ(g.ir["metrics"][2]["max_val"], 255);
}

struct Refusal {
  const char* name;
  json metrics;
  const char* pointer;
  const char* words;
};

void PrintTo(const Refusal& r, std::ostream* os) { *os << r.name; }

class ModelMetricRefusals : public ::testing::TestWithParam<Refusal> {};

TEST_P(ModelMetricRefusals, NameThePointer) {
  try {
    build_graph(image_model({{"metrics", GetParam().metrics}}), Origin{"m.json"});
    FAIL() << "expected a refusal";
  } catch (const ManifestError& e) {
    EXPECT_EQ(e.pointer, GetParam().pointer) << e.what();
    EXPECT_NE(std::string(e.what()).find(GetParam().words), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ModelMetricRefusals,
    ::testing::Values(Refusal{"NotAnArray", "psnr", "/model/metrics", "must be an array"},
                      Refusal{"Unknown", {"psnrr"}, "/model/metrics/0", "unknown metric 'psnrr'"},
                      Refusal{"AccuracyOfValues", {"accuracy"}, "/model/metrics/0", "scores classes"},
                      Refusal{"UnknownOption", {{{"type", "psnr"}, {"max_value", 1}}}, "/model/metrics/0/max_value", "unknown field"},
                      Refusal{"NegativeScale", {{{"type", "psnr"}, {"max_val", -1}}}, "/model/metrics/0/max_val", "positive"},
                      Refusal{"EvenWindow", {{{"type", "ssim"}, {"filter_size", 4}}}, "/model/metrics/0/filter_size", "odd"},
                      Refusal{"WindowTooLarge", {{{"type", "ssim"}, {"filter_size", 17}}}, "/model/metrics/0/filter_size", "does not fit"},
                      Refusal{"Twice", {"mae", "mae"}, "/model/metrics/1", "listed twice"},
                      Refusal{"NoType", {{{"max_val", 1}}}, "/model/metrics/0/type", "a metric is a name"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(ModelMetrics, ClassMetricsNeedAClassLossAndTopKItsClasses) {
  json classifier = {{"input", {{"image", {4}}}},
                     {"layers", {{{"type", "dense"}, {"units", 3}}}},
                     {"loss", {{"type", "sparse_softmax_cross_entropy"}}},
                     {"metrics", {"mae"}}};
  EXPECT_THROW(build_graph(classifier, Origin{"m.json"}), ManifestError);
  classifier["metrics"] = {{{"type", "top_k_accuracy"}, {"k", 4}}};
  try {
    build_graph(classifier, Origin{"m.json"});
    FAIL() << "k above the classes must be refused";
  } catch (const ManifestError& e) {
    EXPECT_EQ(e.pointer, "/model/metrics/0/k");
  }
  classifier["metrics"] = {{{"type", "top_k_accuracy"}, {"k", 3}}};
  EXPECT_EQ(metric_names(build_graph(classifier, Origin{"m.json"})), json({"top_3_accuracy"}));
}

// ---- a regression model end to end, through the host ----

json regression_manifest(const fs::path& dir) {
  auto pipeline = [](int64_t count) {
    return json{{"source",
                 {{"type", "synthetic"},
                  {"count", count},
                  {"tensors",
                   {{"image", {{"shape", {12, 12, 1}}, {"dtype", "float32"}, {"low", 0.0}, {"high", 1.0}}},
                    {"target", {{"shape", {12, 12, 1}}, {"dtype", "float32"}, {"low", 0.25}, {"high", 0.75}}}}}}},
                {"batch", 16}};
  };
  return {{"seed", 4},
          {"data", {{"train", pipeline(64)}, {"eval", pipeline(32)}}},
          {"model",
           {{"input", {{"image", {12, 12, 1}}}},
            {"layers",
             {{{"type", "conv2d"}, {"filters", 4}, {"kernel", 3}, {"padding", "same"}, {"activation", "relu"}},
              {{"type", "conv2d"}, {"filters", 1}, {"kernel", 3}, {"padding", "same"}}}},
            {"loss", {{"type", "mse"}, {"labels", "target"}}},
            {"metrics", {"mae", "psnr", "ssim"}}}},
          {"train",
           {{"backend", "cpu"},
            {"optimizer", {{"type", "adam"}, {"learning_rate", 0.01}}},
            {"epochs", 3},
            {"early_stopping", {{"monitor", "val_psnr"}, {"patience", 5}}},
            {"checkpoint", {{"dir", (dir / "ckpt").string()}}}}},
          {"export", {{"quantizer", "int8"}, {"format", "tflite"}, {"path", (dir / "model.tflite").string()}}}};
}

TEST(RegressionRun, ShowsItsMetricsWritesPredictionsAndExportsInt8) {
  TempDir dir;
  write_file(dir / "m.json", regression_manifest(dir.path()).dump());
  const std::string host = quote(host_binary().string());
  const CommandResult trained = run(host + " run " + quote((dir / "m.json").string()) + " --report " +
                                    quote((dir / "report.json").string()) + " 2>&1");
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  EXPECT_NE(trained.output.find("val_psnr: "), std::string::npos) << trained.output;
  EXPECT_NE(trained.output.find("val_ssim: "), std::string::npos) << trained.output;
  EXPECT_EQ(trained.output.find("accuracy"), std::string::npos) << "a regression has no accuracy:\n" << trained.output;
  const json report = json::parse(std::ifstream(dir / "report.json"));
  const json& last = report["train"]["history"].back();
  for (const char* key : {"val_loss", "val_mae", "val_psnr", "val_ssim"}) EXPECT_TRUE(last.contains(key)) << key;
  EXPECT_FALSE(last.contains("val_accuracy"));
  // The mean absolute error and PSNR of the same data agree with the loss (an MSE): PSNR ≥ −10 log10(mean MSE),
  // the mean of per-example PSNRs being at least the PSNR of the mean error (Jensen).
  EXPECT_GE(last["val_psnr"].get<double>() + 1e-6, -10 * std::log10(last["val_loss"].get<double>()));
  EXPECT_GT(last["val_ssim"].get<double>(), -1.0);
  EXPECT_LE(last["val_ssim"].get<double>(), 1.0);
  // The export scored the int8 model by the same metrics, beside float32.
  const json& exported = report["export"];
  for (const char* key : {"fp32_psnr", "int8_psnr", "fp32_mae", "int8_mae"}) EXPECT_TRUE(exported.contains(key)) << exported.dump();
  EXPECT_NEAR(exported["int8_psnr"].get<double>(), exported["fp32_psnr"].get<double>(), 3.0) << exported.dump();

  const CommandResult evaluated = run(host + " eval " + quote((dir / "m.json").string()) + " --predictions " +
                                      quote((dir / "out").string()) + " --json 2>&1");
  ASSERT_EQ(evaluated.exit_code, 0) << evaluated.output;
  const json eval = json::parse(evaluated.output.substr(evaluated.output.find('{')));
  EXPECT_NEAR(eval["psnr"].get<double>(), last["val_psnr"].get<double>(), 1e-4);
  // predictions.npy: 32 examples of [12, 12, 1] float32, and a PNG per example.
  std::ifstream npy(dir / "out" / "predictions.npy", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(npy)), {});
  ASSERT_GT(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 6), "\x93NUMPY");
  const size_t header = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  EXPECT_EQ((10 + header) % 64, 0u);
  EXPECT_NE(bytes.find("'shape': (32, 12, 12, 1)"), std::string::npos) << bytes.substr(0, 10 + header);
  EXPECT_EQ(bytes.size(), 10 + header + 32 * 144 * 4);
  EXPECT_FALSE(fs::exists(dir / "out" / "classes.npy"));
  for (const char* kept : {"inputs.npy", "targets.npy"}) {
    std::ifstream f(dir / "out" / kept, std::ios::binary);
    std::string all((std::istreambuf_iterator<char>(f)), {});
    EXPECT_EQ(all.size(), bytes.size()) << kept << ": the same shape as the predictions";
  }
  for (const char* png : {"00000.png", "00031.png"}) {
    std::ifstream f(dir / "out" / png, std::ios::binary);
    std::string head(8, '\0');
    ASSERT_TRUE(f.read(head.data(), 8)) << png;
    EXPECT_EQ(head, "\x89PNG\r\n\x1a\n") << png;
  }
  EXPECT_FALSE(fs::exists(dir / "out" / "00032.png"));
}

TEST(RegressionRun, AUNetsInt8ModelIsScoredByTheExportAndByEvalLikeItsFloatModel) {
  // The image-to-image layers have an int8 form in the cpu backend too: the export scores the int8 U-Net instead
  // of skipping it, and `eval --precision int8` runs it.
  TempDir dir;
  json doc = regression_manifest(dir.path());
  doc["model"]["layers"] = {
      {{"type", "conv2d"}, {"name", "enc"}, {"filters", 4}, {"kernel", 3}, {"padding", "same"}, {"activation", "relu"}},
      {{"type", "max_pool"}, {"pool", 2}},
      {{"type", "conv2d"}, {"filters", 8}, {"kernel", 3}, {"padding", "same"}, {"activation", "relu"}},
      {{"type", "conv2d_transpose"}, {"name", "up"}, {"filters", 4}, {"kernel", 2}, {"strides", 2}, {"padding", "same"}},
      {{"type", "concat"}, {"inputs", {"up", "enc"}}},
      {{"type", "conv2d"}, {"filters", 1}, {"kernel", 3}, {"padding", "same"}}};
  write_file(dir / "m.json", doc.dump());
  const std::string host = quote(host_binary().string());
  const CommandResult trained = run(host + " run " + quote((dir / "m.json").string()) + " --report " +
                                    quote((dir / "report.json").string()) + " 2>&1");
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  EXPECT_EQ(trained.output.find("int8 evaluation skipped"), std::string::npos) << trained.output;
  const json exported = json::parse(std::ifstream(dir / "report.json"))["export"];
  EXPECT_FALSE(exported.contains("int8_evaluation")) << exported.dump();
  for (const char* key : {"fp32_psnr", "int8_psnr", "int8_samples_per_s"}) ASSERT_TRUE(exported.contains(key)) << exported.dump();
  EXPECT_NEAR(exported["int8_psnr"].get<double>(), exported["fp32_psnr"].get<double>(), 3.0) << exported.dump();

  const CommandResult int8 = run(host + " eval " + quote((dir / "m.json").string()) + " --precision int8 --json 2>&1");
  ASSERT_EQ(int8.exit_code, 0) << int8.output;
  const json eval = json::parse(int8.output.substr(int8.output.find('{')));
  EXPECT_NEAR(eval["psnr"].get<double>(), exported["int8_psnr"].get<double>(), 0.5) << int8.output;
}

TEST(RegressionRun, AMonitorOfAMetricTheModelLacksIsRefusedBeforeTraining) {
  TempDir dir;
  json doc = regression_manifest(dir.path());
  doc["train"]["early_stopping"]["monitor"] = "val_accuracy";
  write_file(dir / "m.json", doc.dump());
  const CommandResult r = run(quote(host_binary().string()) + " validate " + quote((dir / "m.json").string()) + " 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("#/train/early_stopping/monitor"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("val_psnr"), std::string::npos) << "the message lists what can be watched:\n" << r.output;
  EXPECT_FALSE(fs::exists(dir / "ckpt"));
}

}  // namespace

// A training backend with no integer kernels (the cuda backend's case, played here by the linear test backend):
// the export and `eval --precision int8` score the int8 model on another backend of the plugin set, the cpu
// backend, and say so, instead of skipping it.
TEST(Int8Scoring, RunsOnAnotherBackendWhenTheTrainingOneHasNoIntegerKernels) {
  TempDir dir;
  auto pipeline = [](int64_t count) {
    return json{{"source",
                 {{"type", "synthetic"},
                  {"count", count},
                  {"tensors",
                   {{"image", {{"shape", {4, 4, 1}}, {"dtype", "float32"}, {"low", 0.0}, {"high", 1.0}}},
                    {"label", {{"shape", json::array()}, {"dtype", "int32"}, {"low", 0}, {"high", 3}}}}}}},
                {"batch", 8}};
  };
  const json doc = {
      {"seed", 5},
      {"data", {{"train", pipeline(32)}, {"eval", pipeline(24)}}},
      {"model",
       {{"input", {{"image", {4, 4, 1}}}},
        {"layers", {{{"type", "flatten"}}, {{"type", "dense"}, {"units", 3}}}},
        {"loss", {{"type", "sparse_softmax_cross_entropy"}, {"labels", "label"}}}}},
      {"train",
       {{"backend", "linear"},
        {"optimizer", {{"type", "adam"}, {"learning_rate", 0.01}}},
        {"epochs", 2},
        {"checkpoint", {{"dir", (dir / "ckpt").string()}}}}},
      {"export", {{"quantizer", "int8"}, {"format", "tflite"}, {"path", (dir / "model.tflite").string()}}}};
  write_file(dir / "m.json", doc.dump());
  const std::string host = "env RAMJET_PLUGIN_PATH=" +
                           quote(stock_plugin_dir().string() + ":" + fixture_dir("linear_backend").string()) + " " +
                           quote(host_binary().string());
  const CommandResult trained = run(host + " run " + quote((dir / "m.json").string()) + " --report " +
                                    quote((dir / "report.json").string()) + " 2>&1");
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  EXPECT_EQ(trained.output.find("int8 evaluation skipped"), std::string::npos) << trained.output;
  const json exported = json::parse(std::ifstream(dir / "report.json"))["export"];
  EXPECT_EQ(exported.value("int8_backend", ""), "cpu") << exported.dump();
  for (const char* key : {"fp32_accuracy", "int8_accuracy"}) ASSERT_TRUE(exported.contains(key)) << exported.dump();
  EXPECT_NEAR(exported["int8_accuracy"].get<double>(), exported["fp32_accuracy"].get<double>(), 0.2) << exported.dump();

  const CommandResult int8 = run(host + " eval " + quote((dir / "m.json").string()) + " --precision int8 --json 2>&1");
  ASSERT_EQ(int8.exit_code, 0) << int8.output;
  const json eval = json::parse(int8.output.substr(int8.output.find('{')));
  EXPECT_EQ(eval.value("int8_backend", ""), "cpu") << int8.output;
  EXPECT_DOUBLE_EQ(eval["accuracy"].get<double>(), exported["int8_accuracy"].get<double>()) << int8.output;
}
