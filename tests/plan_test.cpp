// The one reading of a manifest: every problem in every section in one pass, each with its JSON pointer; the
// core's own words checked by the core, the components' words by the components (in their own words); a typed
// plan with the defaults filled in.
#include "ramjet/deploy/model_export.hpp"
#include "ramjet/plan/plan.hpp"
#include "ramjet/plugin/failure.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

using namespace ramjet::core;
using namespace ramjet::test;

namespace {

nlohmann::json valid_doc() {
  return nlohmann::json::parse(R"({
    "seed": 3,
    "data": {"train": {"source": {"type": "synthetic", "count": 8, "tensors": {"x": {"shape": [4]}, "label": {"shape": [2]}}}, "batch": 4},
             "eval": {"source": {"type": "synthetic", "count": 8, "tensors": {"x": {"shape": [4]}, "label": {"shape": [2]}}}}},
    "model": {"input": {"x": [4]}, "layers": [{"type": "dense", "units": 2}], "loss": {"type": "mse"}},
    "train": {"backend": "cpu", "precision": "mixed_bfloat16", "optimizer": {"type": "adam", "learning_rate": 0.01}},
    "export": {"quantizer": "int8", "format": "tflite", "path": "out/m.tflite",
               "calibration": {"batches": 4, "data": "eval", "method": "percentile", "percentile": 99.9}}})");
}

class PlanTest : public ::testing::Test {
 protected:
  TempDir dir;
  PluginRegistry registry{DiscoveryOptions{{stock_plugin_dir()}, {}, {}}};

  PlanReading read(const nlohmann::json& doc) {
    write_file(dir / "m.json", doc.dump());
    return read_plan(load_pipeline_manifest(dir / "m.json"), registry);
  }
  // "pointer: message" per line.
  std::string problems(const nlohmann::json& doc) {
    std::string all;
    for (const auto& p : read(doc).problems) all += p.pointer + ": " + p.message + "\n";
    return all;
  }
};

}  // namespace

TEST_F(PlanTest, AValidManifestBecomesATypedPlanWithItsDefaults) {
  if (!registry.provider(RAMJET_KIND_BACKEND, "cpu")) GTEST_SKIP() << "the onednn plugin is not built here";
  const PlanReading r = read(valid_doc());
  ASSERT_TRUE(r.problems.empty()) << r.problems.front().pointer << ": " << r.problems.front().message;
  const Plan& p = r.plan;
  EXPECT_EQ(p.seed, 3u);
  ASSERT_TRUE(p.train_data && p.eval_data && p.graph && p.train && p.exporting);
  EXPECT_EQ(p.train_data->batch, 4);
  EXPECT_EQ(p.eval_data->batch, 1);  // the one default, PipelineSpec's
  EXPECT_EQ(p.train->precision_name(), "mixed_bfloat16");
  EXPECT_EQ(p.train->strategy_name(), "single");
  EXPECT_DOUBLE_EQ(p.train->learning_rate, 0.01);
  EXPECT_EQ(p.train->epochs, 1);
  EXPECT_EQ(p.exporting->path, dir / "out/m.tflite");
  EXPECT_EQ(p.exporting->calibration_batches, 4);
  EXPECT_EQ(p.exporting->calibration_data, "eval");
  // The quantizer gets the section less the core's words.
  EXPECT_EQ(p.exporting->quantizer.own_config(),
            nlohmann::json::parse(R"({"calibration": {"method": "percentile", "percentile": 99.9}})"));
}

TEST_F(PlanTest, FiveProblemsInFourSectionsAreReportedTogetherInTheOwnersWords) {
  if (!registry.provider(RAMJET_KIND_BACKEND, "cpu") || !registry.provider(RAMJET_KIND_QUANTIZER, "int8"))
    GTEST_SKIP() << "the onednn and tflite plugins are not built here";
  nlohmann::json doc = valid_doc();
  doc["data"]["train"]["batch"] = 0;                              // data: the core's word
  doc["model"]["layers"][0]["type"] = "denze";                    // model: the graph builder's
  doc["train"]["precision"] = "mixed_bfloat61";                   // train: no such precision policy
  doc["train"]["optimizer"]["beta_9"] = 0.9;                      // train: the backend's optimizer words
  doc["export"]["calibration"]["method"] = "median";             // export: the int8 quantizer's words
  const std::string all = problems(doc);
  EXPECT_NE(all.find("/data/train/batch: must be >= 1"), std::string::npos) << all;
  EXPECT_NE(all.find("/model/layers/0/type:"), std::string::npos) << all;
  EXPECT_NE(all.find("/train/precision: no plugin provides precision_policy 'mixed_bfloat61' (did you mean "
                     "'mixed_bfloat16'?)"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("/train/optimizer/beta_9: unknown field 'beta_9'"), std::string::npos) << all;
  EXPECT_NE(all.find("/export/calibration/method:"), std::string::npos) << all;
  EXPECT_NE(all.find("median"), std::string::npos) << all;
}

TEST_F(PlanTest, AComponentsUnknownKeyIsReportedWithItsPointer) {
  nlohmann::json doc = valid_doc();
  doc.erase("train");
  doc.erase("model");
  doc.erase("export");
  doc["data"]["train"]["source"]["sede"] = 1;
  const std::string all = problems(doc);
  EXPECT_NE(all.find("/data/train/source/sede: unknown field 'sede'"), std::string::npos) << all;
}

TEST_F(PlanTest, AMissingQuantizerOrExporterIsNamedWhereItWasWritten) {
  nlohmann::json doc = valid_doc();
  doc["export"]["quantizer"] = "nonesuch";
  doc["export"]["format"] = "nowhere";
  const std::string all = problems(doc);
  EXPECT_NE(all.find("/export/quantizer: no plugin provides quantizer 'nonesuch'"), std::string::npos) << all;
  EXPECT_NE(all.find("/export/format: no plugin provides exporter 'nowhere'"), std::string::npos) << all;
}

TEST_F(PlanTest, CoreWordsAreCheckedWithTheirPointers) {
  nlohmann::json doc = valid_doc();
  doc["export"].erase("path");
  doc["export"]["calibration"]["batches"] = 0;
  doc["train"]["epochs"] = -1;
  doc["train"]["early_stopping"] = {{"monitor", "val_loss"}, {"patiense", 2}};
  doc["train"]["schedule"] = {{"type", "step"}};
  doc["sed"] = 4;
  const std::string all = problems(doc);
  for (const char* expected :
       {"/export/path: required field is missing", "/export/calibration/batches: must be >= 1",
        "/train/epochs: must be >= 1", "/train/early_stopping/patiense: unknown field 'patiense' (did you mean 'patience'?)",
        "/train/schedule/step_size: required", "/sed: unknown field 'sed' (did you mean 'seed'?)"})
    EXPECT_NE(all.find(expected), std::string::npos) << expected << "\n" << all;
}

TEST_F(PlanTest, TheExportFolderIsCreatedOrRefusedBeforeAnyTraining) {
  Plan plan;
  plan.origin = Origin{dir / "m.json"};
  plan.exporting.emplace();
  plan.exporting->path = dir / "out/deeper/model.tflite";
  prepare_export_destination(plan);
  EXPECT_TRUE(std::filesystem::is_directory(dir / "out/deeper"));
  plan.exporting->path = "/proc/no-such-folder/model.tflite";
  try {
    prepare_export_destination(plan);
    FAIL() << "a folder under /proc cannot be created";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("m.json#/export/path: cannot create the folder"), std::string::npos) << e.what();
  }
}
