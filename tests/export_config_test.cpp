// The manifest's `export` section: every field is checked with its JSON pointer, and a quantizer or exporter that
// no plugin provides is named.
#include "ramjet/core/export_config.hpp"
#include "ramjet/core/failure.hpp"
#include "ramjet/core/model_export.hpp"
#include "ramjet/core/pipeline_manifest.hpp"
#include "ramjet/core/plugin_registry.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

using namespace ramjet::core;
using namespace ramjet::test;

namespace {

PipelineManifest manifest_with_export(const nlohmann::json& section) {
  PipelineManifest m;
  m.path = "/models/m.json";
  m.doc = {{"export", section}};
  return m;
}

std::string problem_of(const nlohmann::json& section) {
  try {
    read_export_config(manifest_with_export(section));
  } catch (const ManifestError& e) {
    return e.pointer + ": " + e.message;
  }
  return "";
}

}  // namespace

TEST(ExportConfig, ReadsEveryFieldAndResolvesThePath) {
  const ExportConfig c = read_export_config(manifest_with_export(
      {{"quantizer", "int8"}, {"format", "tflite"}, {"path", "out/model.tflite"}, {"input_type", "uint8"},
       {"output_type", "float32"}, {"calibration", {{"batches", 4}, {"method", "percentile"}, {"percentile", 99.9}, {"data", "eval"}}},
       {"evaluate", false}}));
  EXPECT_EQ(c.path, std::filesystem::path("/models/out/model.tflite"));
  EXPECT_EQ(c.input_type, "uint8");
  EXPECT_EQ(c.output_type, "float32");
  EXPECT_EQ(c.calibration_batches, 4);
  EXPECT_EQ(c.calibration_method, "percentile");
  EXPECT_DOUBLE_EQ(c.calibration_percentile, 99.9);
  EXPECT_EQ(c.calibration_data, "eval");
  EXPECT_FALSE(c.evaluate);
  EXPECT_EQ(c.quantizer_config()["method"], "percentile");
  EXPECT_EQ(c.quantizer_config()["input_type"], "uint8");
  const ExportConfig d = read_export_config(manifest_with_export({{"path", "/abs/m.tflite"}}));
  EXPECT_EQ(d.path, std::filesystem::path("/abs/m.tflite"));
  EXPECT_EQ(d.calibration_method, "minmax");
  EXPECT_EQ(d.mode, "full_integer");
}

TEST(ExportConfig, BadFieldsNameTheirPointer) {
  EXPECT_EQ(problem_of({{"format", "tflite"}}), "/export/path: required: where to write the exported model");
  EXPECT_NE(problem_of({{"path", "m.tflite"}, {"calibration", {{"method", "entropy"}}}}).find("/export/calibration/method: must be one of"), std::string::npos);
  EXPECT_NE(problem_of({{"path", "m.tflite"}, {"calibration", {{"batches", 0}}}}).find("/export/calibration/batches"), std::string::npos);
  EXPECT_NE(problem_of({{"path", "m.tflite"}, {"input_type", "int4"}}).find("/export/input_type"), std::string::npos);
  EXPECT_NE(problem_of({{"path", "m.tflite"}, {"colour", "blue"}}).find("/export/colour: unknown field"), std::string::npos);
  EXPECT_NE(problem_of({{"path", "m.tflite"}, {"mode", "dynamic_range"}, {"input_type", "int8"}}).find("/export/mode"),
            std::string::npos);
  EXPECT_EQ(problem_of({{"path", "m.tflite"}, {"mode", "dynamic_range"}}), "");
}

TEST(ExportConfig, ValidationNamesAMissingQuantizerOrExporter) {
  TempDir dir;
  PluginRegistry registry{DiscoveryOptions{{stock_plugin_dir()}, {}, {}}};
  const nlohmann::json doc = nlohmann::json::parse(R"({
    "data": {"train": {"source": {"type": "synthetic", "count": 8, "tensors": {"x": {"shape": [4]}}}}},
    "model": {"input": {"x": [4]}, "layers": [{"type": "dense", "units": 2}], "loss": {"type": "mse"}},
    "train": {"backend": "cpu"},
    "export": {"quantizer": "nonesuch", "format": "nowhere", "path": "m.tflite"}})");
  write_file(dir / "m.json", doc.dump());
  const auto problems = validate_pipeline_manifest(load_pipeline_manifest(dir / "m.json"), registry);
  std::string all;
  for (const auto& p : problems) all += p.pointer + ": " + p.message + "\n";
  EXPECT_NE(all.find("/export/quantizer: no plugin provides quantizer 'nonesuch'"), std::string::npos) << all;
  EXPECT_NE(all.find("/export/format: no plugin provides exporter 'nowhere'"), std::string::npos) << all;
}

TEST(ExportConfig, TheDestinationFolderIsCreatedOrRefusedBeforeAnyTraining) {
  TempDir dir;
  PipelineManifest m = manifest_with_export({{"path", "out/deeper/model.tflite"}});
  m.path = dir / "m.json";
  prepare_export_destination(m);
  EXPECT_TRUE(std::filesystem::is_directory(dir / "out/deeper"));
  PipelineManifest bad = manifest_with_export({{"path", "/proc/no-such-folder/model.tflite"}});
  try {
    prepare_export_destination(bad);
    FAIL() << "a folder under /proc cannot be created";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("/models/m.json#/export/path: cannot create the folder"), std::string::npos)
        << e.what();
  }
}
