// Mistaken pipeline manifests, each run through `ramjet validate` as a user would: a wrong type or range in any
// section, an unknown field (with the word it likely meant), a data file that is not there, a model input or
// label that the data does not give, a layer on an input of the wrong rank. Each must end in exit 2 with the JSON
// pointer of the mistake, no raw JSON-library text, and nothing trained. A softmax before a loss that reads
// logits still trains: a warning, exit 0.
#include "hostile_run.hpp"
#include "test_support.hpp"

#include "../hosts/ramjet/escaped_json_error.hpp"
#include "ramjet/plugin/components.hpp"
#include "ramjet/plugin/failure.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <sstream>

using namespace ramjet::test;
using nlohmann::json;

namespace {

// Valid as it stands (ManifestValidation.BaseManifestIsValid): every case below changes one thing.
json valid_manifest() {
  return json::parse(R"({
    "seed": 3,
    "data": {
      "train": {"source": {"type": "synthetic", "count": 32,
                           "tensors": {"image": {"shape": [4, 4, 1], "dtype": "uint8", "low": 0, "high": 256},
                                       "label": {"shape": [], "dtype": "int32", "low": 0, "high": 5}}},
                "map": [{"type": "normalize", "scale": 0.00392156862745098}], "batch": 8},
      "eval": {"source": {"type": "synthetic", "count": 16,
                          "tensors": {"image": {"shape": [4, 4, 1], "dtype": "uint8", "low": 0, "high": 256},
                                      "label": {"shape": [], "dtype": "int32", "low": 0, "high": 5}}},
               "map": [{"type": "normalize", "scale": 0.00392156862745098}], "batch": 8}
    },
    "model": {"input": {"image": [4, 4, 1]},
              "layers": [{"type": "conv2d", "filters": 4, "kernel": 3, "activation": "relu"},
                         {"type": "flatten"}, {"type": "dense", "units": 5}],
              "loss": {"type": "sparse_softmax_cross_entropy"}},
    "train": {"backend": "cpu", "optimizer": {"type": "sgd", "learning_rate": 0.1}, "epochs": 1,
              "checkpoint": {"dir": "ckpt", "keep": 2}},
    "export": {"quantizer": "int8", "format": "tflite", "path": "out/model.tflite"}
  })");
}

struct ValidationCase {
  std::string name;
  std::function<void(json&)> edit;
  std::vector<std::string> needles;  // the file and JSON pointer, and words the message must have
  int exit_code = 2;
};

// `pointer` (RFC 6901) set to `value` in the base manifest.
ValidationCase set(std::string name, const std::string& pointer, json value, std::vector<std::string> needles) {
  return {std::move(name), [pointer, value](json& d) { d[json::json_pointer(pointer)] = value; }, std::move(needles)};
}
ValidationCase edit(std::string name, std::function<void(json&)> change, std::vector<std::string> needles, int exit_code = 2) {
  return {std::move(name), std::move(change), std::move(needles), exit_code};
}
json source_of(const std::string& text) { return json::parse(text); }

std::vector<ValidationCase> validation_cases() {
  std::vector<ValidationCase> c;
  // ---- wrong types, in every section ----------------------------------------------------------------------------
  c.push_back(set("SeedString", "/seed", "three", {"m.json#/seed", "non-negative integer"}));
  c.push_back(set("BatchString", "/data/train/batch", "32", {"m.json#/data/train/batch", "must be an integer"}));
  c.push_back(set("DropRemainderString", "/data/train/drop_remainder", "yes", {"m.json#/data/train/drop_remainder", "true or false"}));
  c.push_back(set("MapNotAnArray", "/data/train/map", json::object(), {"m.json#/data/train/map", "must be an array"}));
  c.push_back(set("CacheNumber", "/data/eval/cache", 5, {"m.json#/data/eval/cache", "must be a string"}));
  c.push_back(set("SourceCountString", "/data/train/source/count", "64", {"m.json#/data/train/source/count"}));
  c.push_back(set("TransformScaleString", "/data/train/map/0/scale", "1/255", {"m.json#/data/train/map/0/scale"}));
  c.push_back(set("InputDtypeFloat64", "/model/input/image", json::parse(R"({"shape": [4, 4, 1], "dtype": "float64"})"),
                  {"m.json#/model/input/image/dtype", "float32"}));
  c.push_back(set("FiltersString", "/model/layers/0/filters", "4", {"m.json#/model/layers/0/filters", "must be an integer"}));
  c.push_back(set("ActivationNumber", "/model/layers/0/activation", 1, {"m.json#/model/layers/0/activation"}));
  c.push_back(set("LossLabelsNumber", "/model/loss/labels", 7, {"m.json#/model/loss/labels"}));
  c.push_back(set("TrainEpochsString", "/train/epochs", "1", {"m.json#/train/epochs", "must be an integer"}));
  c.push_back(set("OptimizerNotAnObject", "/train/optimizer", "sgd", {"m.json#/train/optimizer", "must be an object"}));
  c.push_back(set("LearningRateString", "/train/optimizer/learning_rate", "0.1", {"m.json#/train/optimizer/learning_rate"}));
  c.push_back(set("CheckpointEveryStepsString", "/train/checkpoint/every_steps", "100",
                  {"m.json#/train/checkpoint/every_steps", "must be an integer"}));
  c.push_back(set("TensorboardNumber", "/train/tensorboard", 1, {"m.json#/train/tensorboard", "must be a string"}));
  c.push_back(set("EarlyStoppingPatienceString", "/train/early_stopping", json::parse(R"({"patience": "3"})"),
                  {"m.json#/train/early_stopping/patience", "must be an integer"}));
  c.push_back(set("ExportPathNumber", "/export/path", 5, {"m.json#/export/path", "must be a string"}));
  c.push_back(set("ExportEvaluateString", "/export/evaluate", "yes", {"m.json#/export/evaluate", "true or false"}));
  c.push_back(set("ScheduleNotAnObject", "/train/schedule", 3, {"m.json#/train/schedule", "must be an object"}));

  // ---- numbers out of range -------------------------------------------------------------------------------------
  c.push_back(set("ReduceLrFactorOne", "/train/reduce_lr_on_plateau", json::parse(R"({"factor": 1})"),
                  {"m.json#/train/reduce_lr_on_plateau/factor", "< 1"}));
  c.push_back(set("LabelSmoothingOne", "/model/loss/label_smoothing", 1, {"m.json#/model/loss/label_smoothing", "[0, 1)"}));
  c.push_back(set("CalibrationBatchesZero", "/export/calibration", json::parse(R"({"batches": 0})"),
                  {"m.json#/export/calibration/batches", ">= 1"}));
  c.push_back(set("DropoutRateOne", "/model/layers/1", json::parse(R"({"type": "dropout", "rate": 1})"),
                  {"m.json#/model/layers/1/rate", "[0, 1)"}));
  c.push_back(set("ScheduleGammaTwo", "/train/schedule", json::parse(R"({"type": "step", "step_size": 10, "gamma": 2})"),
                  {"m.json#/train/schedule/gamma", "<= 1"}));
  c.push_back(set("LossFromLogitsFalse", "/model/loss/from_logits", false, {"m.json#/model/loss/from_logits"}));

  // ---- unknown fields and words, with the one likely meant ------------------------------------------------------
  c.push_back(set("TopLevelTypo", "/trian", json::object(), {"m.json#/trian", "did you mean 'train'?"}));
  c.push_back(set("PipelineFieldTypo", "/data/train/bacth", 8, {"m.json#/data/train/bacth", "did you mean 'batch'?"}));
  c.push_back(set("OnErrorTypo", "/data/train/on_error", "skp", {"m.json#/data/train/on_error", "did you mean 'skip'?"}));
  c.push_back(set("InterleaveTypo", "/data/train/interleave", json::parse(R"({"cycle_lenght": 2})"),
                  {"m.json#/data/train/interleave/cycle_lenght", "did you mean 'cycle_length'?"}));
  c.push_back(set("SourceFieldTypo", "/data/train/source/cont", 8, {"m.json#/data/train/source/cont", "did you mean 'count'?"}));
  c.push_back(set("TransformFieldTypo", "/data/train/map/0/scal", 2, {"m.json#/data/train/map/0/scal", "did you mean 'scale'?"}));
  c.push_back(set("ModelFieldTypo", "/model/lyers", json::array(), {"m.json#/model/lyers", "did you mean 'layers'?"}));
  c.push_back(set("InputFieldTypo", "/model/input/image", json::parse(R"({"shape": [4, 4, 1], "dtyp": "float32"})"),
                  {"m.json#/model/input/image/dtyp", "did you mean 'dtype'?"}));
  c.push_back(set("LayerFieldTypo", "/model/layers/0/filter", 4, {"m.json#/model/layers/0/filter", "did you mean 'filters'?"}));
  c.push_back(set("LayerTypeTypo", "/model/layers/0/type", "conv2", {"m.json#/model/layers/0/type", "did you mean 'conv2d'?"}));
  c.push_back(set("LossFieldTypo", "/model/loss/from_logit", true, {"m.json#/model/loss/from_logit", "did you mean 'from_logits'?"}));
  c.push_back(set("LossFieldOfAnotherLoss", "/model/loss", json::parse(R"({"type": "mse", "ignore_label": 0})"),
                  {"m.json#/model/loss/ignore_label", "for a mse loss"}));
  c.push_back(set("TrainFieldTypo", "/train/epoch", 1, {"m.json#/train/epoch", "did you mean 'epochs'?"}));
  c.push_back(set("EarlyStoppingTypo", "/train/early_stopping", json::parse(R"({"patiense": 3})"),
                  {"m.json#/train/early_stopping/patiense", "did you mean 'patience'?"}));
  c.push_back(set("EarlyStoppingMonitorTypo", "/train/early_stopping", json::parse(R"({"monitor": "val_los"})"),
                  {"m.json#/train/early_stopping/monitor", "did you mean 'val_loss'?"}));
  c.push_back(set("ReduceLrTypo", "/train/reduce_lr_on_plateau", json::parse(R"({"cooldwn": 2})"),
                  {"m.json#/train/reduce_lr_on_plateau/cooldwn", "did you mean 'cooldown'?"}));
  c.push_back(set("CheckpointTypo", "/train/checkpoint/kepp", 2, {"m.json#/train/checkpoint/kepp", "did you mean 'keep'?"}));
  c.push_back(set("ScheduleTypeTypo", "/train/schedule", json::parse(R"({"type": "cosin"})"),
                  {"m.json#/train/schedule/type", "did you mean 'cosine'?"}));
  c.push_back(set("ScheduleFieldTypo", "/train/schedule", json::parse(R"({"type": "cosine", "decay_step": 10})"),
                  {"m.json#/train/schedule/decay_step", "did you mean 'decay_steps'?"}));
  c.push_back(set("CalibrationDataTypo", "/export/calibration", json::parse(R"({"data": "evl"})"),
                  {"m.json#/export/calibration/data", "did you mean 'eval'?"}));

  // ---- data files that are not there ----------------------------------------------------------------------------
  c.push_back(set("IdxImagesMissing", "/data/train/source",
                  source_of(R"({"type": "idx", "images": "absent-images.gz", "labels": "absent-labels.gz"})"),
                  {"m.json#/data/train/source/images", "absent-images.gz", "no such file"}));
  c.push_back(edit("IdxLabelsMissing",
                   [](json& d) {
                     d["data"]["train"]["source"] = {{"type", "idx"}, {"images", "."}, {"labels", "absent-labels.gz"}};
                   },
                   {"m.json#/data/train/source/images", "is a folder", "m.json#/data/train/source/labels", "no such file"}));
  c.push_back(set("TFRecordPatternMatchesNothing", "/data/train/source",
                  source_of(R"({"type": "tfrecord", "files": "records/*.tfrecord", "features": {"image": {"type": "bytes"}}})"),
                  {"m.json#/data/train/source/files", "matches no files"}));
  c.push_back(set("TFRecordFileInListMissing", "/data/train/source",
                  source_of(R"({"type": "tfrecord", "files": ["m.json", "absent.tfrecord"], "features": {"image": {"type": "bytes"}}})"),
                  {"m.json#/data/train/source/files/1", "absent.tfrecord", "no such file"}));
  c.push_back(set("ImageFolderRootMissing", "/data/train/source", source_of(R"({"type": "image_folder", "root": "photos"})"),
                  {"m.json#/data/train/source/root", "photos", "no such folder"}));
  c.push_back(set("TextCorpusMissing", "/data/train/source",
                  source_of(R"({"type": "text", "files": "corpus.txt", "context": 8, "vocabulary": "vocab.json"})"),
                  {"m.json#/data/train/source/files", "corpus.txt", "no such file"}));

  // ---- the model against the data -------------------------------------------------------------------------------
  c.push_back(edit("InputNameNotInData",
                   [](json& d) { d["model"]["input"] = {{"imag", {4, 4, 1}}}; },
                   {"m.json#/model/input/imag", "not in the data", "/data/train", "did you mean 'image'?"}));
  c.push_back(set("InputShapeNotTheData", "/model/input/image", {8, 8, 1},
                  {"m.json#/model/input/image", "[8, 8, 1]", "/data/train", "[4, 4, 1]"}));
  c.push_back(edit("InputDtypeNotTheData", [](json& d) { d["data"]["train"].erase("map"); },
                   {"m.json#/model/input/image", "float32", "/data/train/source", "uint8"}));
  c.push_back(set("LabelsNotInData", "/model/loss/labels", "target", {"m.json#/model/loss/labels", "'target' is not in the data"}));
  c.push_back(set("ClassLabelsAreFloats", "/data/train/source/tensors/label/dtype", "float32",
                  {"m.json#/model/loss/labels", "'label' is int32 here", "/data/train", "gives float32", "cast"}));
  c.push_back(edit("LabelShapeNotTheData",
                   [](json& d) { d["data"]["eval"]["source"]["tensors"]["label"]["shape"] = {3}; },
                   {"m.json#/model/loss/labels", "/data/eval", "[3]"}));

  // ---- layers on inputs of the wrong rank (Keras's rules) -------------------------------------------------------
  c.push_back(edit("Conv2dOnAVector",
                   [](json& d) {
                     d["model"]["input"]["image"] = {16};
                     d["data"]["train"]["source"]["tensors"]["image"]["shape"] = {16};
                     d["data"]["eval"]["source"]["tensors"]["image"]["shape"] = {16};
                   },
                   {"m.json#/model/layers/0", "layer 'conv2d'", "[16]"}));
  c.push_back(set("GlobalPoolOnAVector", "/model/layers/2", json::parse(R"({"type": "global_avg_pool"})"),
                  {"m.json#/model/layers/2", "layer 'global_avg_pool'", "[16]"}));
  c.push_back(set("MaxPoolOnAVector", "/model/layers/2", json::parse(R"({"type": "max_pool", "name": "pool"})"),
                  {"m.json#/model/layers/2", "layer 'pool'", "[H, W, C]"}));
  c.push_back(set("Conv1dOnAnImage", "/model/layers/0", json::parse(R"({"type": "conv1d", "filters": 4, "kernel": 3})"),
                  {"m.json#/model/layers/0", "layer 'conv1d'", "[4, 4, 1]"}));

  // ---- a mistake that still trains: a warning, exit 0 -----------------------------------------------------------
  c.push_back(edit("SoftmaxBeforeLogitsLossWarns",
                   [](json& d) { d["model"]["layers"].push_back({{"type", "softmax"}}); },
                   {"warning", "m.json#/model/layers/3", "softmax", "logits", "valid (with warnings)"}, 0));
  c.push_back(edit("SigmoidBeforeBinaryLossWarns",
                   [](json& d) {
                     for (const char* p : {"train", "eval"})
                       d["data"][p]["source"]["tensors"]["label"] = {{"shape", {1}}, {"dtype", "float32"}};
                     d["model"]["layers"][2] = {{"type", "dense"}, {"units", 1}, {"activation", "sigmoid"}};
                     d["model"]["loss"] = {{"type", "binary_cross_entropy"}};
                   },
                   {"warning", "m.json#/model/layers/2/activation", "sigmoid", "binary_cross_entropy"}, 0));
  c.push_back(set("LossTypeTypo", "/model/loss/type", "binary_crossentropy",
                  {"m.json#/model/loss/type", "did you mean 'binary_cross_entropy'?"}));
  return c;
}

void PrintTo(const ValidationCase& c, std::ostream* os) { *os << c.name; }

std::vector<std::string> validate_argv(const fs::path& manifest) {
  return {"/usr/bin/env", "RAMJET_PLUGIN_PATH=" + stock_plugin_dir().string(), host_binary().string(), "validate",
          manifest.string()};
}

HostileResult validate(const TempDir& dir, const json& doc) {
  write_file(dir / "m.json", doc.dump(1));
  HostileLimits limits;
  limits.working_dir = dir.path();
  limits.seconds = 60;
  return run_hostile(validate_argv(dir / "m.json"), limits);
}

TEST(ManifestValidation, BaseManifestIsValid) {
  TempDir dir;
  const HostileResult r = validate(dir, valid_manifest());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("warning"), std::string::npos) << r.output;
}

class ManifestValidation : public ::testing::TestWithParam<ValidationCase> {};

TEST_P(ManifestValidation, IsFoundBeforeTraining) {
  const ValidationCase& c = GetParam();
  TempDir dir;
  json doc = valid_manifest();
  c.edit(doc);
  const HostileResult r = validate(dir, doc);
  EXPECT_TRUE(refused_cleanly(r, c.exit_code, c.needles));
  EXPECT_EQ(r.output.find("json.exception"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "ckpt")) << "validate trained: " << r.output;
  EXPECT_FALSE(fs::exists(dir / "out")) << "validate exported: " << r.output;
}

INSTANTIATE_TEST_SUITE_P(Cases, ManifestValidation, ::testing::ValuesIn(validation_cases()),
                         [](const ::testing::TestParamInfo<ValidationCase>& info) { return info.param.name; });

// The host's last resort: a JSON-library exception that escaped every check still ends in exit 2 naming the
// manifest, without the library's text.
TEST(ManifestValidationLastResort, EscapedJsonErrorNamesTheManifest) {
  for (const std::function<void()>& wrong : std::vector<std::function<void()>>{
           [] { (void)json(5).get<std::string>(); },              // type_error.302
           [] { (void)json::object().at("missing"); },            // out_of_range.403
           [] { const json broken = json::parse("{"); }}) {        // parse_error.101
    try {
      wrong();
      FAIL() << "the JSON library did not throw";
    } catch (const json::exception& e) {
      ASSERT_NE(std::string(e.what()).find("[json.exception"), std::string::npos);  // what the user must not see
      std::ostringstream err;
      EXPECT_EQ(ramjet::host::report_escaped_json_error(e, "pipelines/m.json", err), 2);
      EXPECT_NE(err.str().find("pipelines/m.json"), std::string::npos) << err.str();
      EXPECT_EQ(err.str().find("json.exception"), std::string::npos) << err.str();
      EXPECT_EQ(err.str().find(e.what()), std::string::npos) << err.str();
    }
  }
}

// A plugin that read its configuration without checking it reports the library's text through its status; the
// host keeps the place (`what`) and the library's reason, in words, without the "[json.exception...]" tag.
TEST(ManifestValidationLastResort, PluginJsonLibraryTagIsReplaced) {
  ramjet_error error;
  error.message = "[json.exception.type_error.302] type must be string, but is number";
  try {
    ramjet::core::throw_on_error(RAMJET_ERR_INVALID_ARGUMENT, error, "stock_sources/idx at m.json#/data/train/source: create");
    FAIL() << "a failing status did not throw";
  } catch (const ramjet::core::InvalidInput& e) {
    const std::string text = e.what();
    EXPECT_EQ(text.find("json.exception"), std::string::npos) << text;
    EXPECT_NE(text.find("m.json#/data/train/source"), std::string::npos) << text;
    EXPECT_NE(text.find("a configuration value of the wrong type: type must be string, but is number"),
              std::string::npos) << text;
  }
}

}  // namespace
