// Hostile pipeline manifests, --set values and command-line values, run through the `ramjet` host as a user would:
// each must end in exit 2 with a message naming the file and the place (JSON pointer, byte offset or flag), no
// signal, no sanitizer report, bounded memory and time, and nothing lost.
#include "hostile_run.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <functional>

using namespace ramjet::test;

namespace {

nlohmann::json base_manifest() {
  return nlohmann::json::parse(R"({
    "seed": 3,
    "data": {
      "train": {"source": {"type": "synthetic", "count": 64,
                           "tensors": {"image": {"shape": [4, 4, 1], "dtype": "uint8", "low": 0, "high": 256},
                                       "label": {"shape": [], "dtype": "int32", "low": 0, "high": 5}}},
                "map": [{"type": "normalize", "scale": 0.00392156862745098}], "batch": 16},
      "eval": {"source": {"type": "synthetic", "count": 32,
                          "tensors": {"image": {"shape": [4, 4, 1], "dtype": "uint8", "low": 0, "high": 256},
                                      "label": {"shape": [], "dtype": "int32", "low": 0, "high": 5}}},
               "map": [{"type": "normalize", "scale": 0.00392156862745098}], "batch": 16}
    },
    "model": {"input": {"image": [4, 4, 1]},
              "layers": [{"type": "conv2d", "filters": 4, "kernel": 3, "activation": "relu"},
                         {"type": "flatten"}, {"type": "dense", "units": 5}],
              "loss": {"type": "sparse_softmax_cross_entropy"}},
    "train": {"backend": "cpu", "precision": "float32", "optimizer": {"type": "sgd", "learning_rate": 0.1},
              "epochs": 1, "checkpoint": {"dir": "ckpt", "keep": 2}},
    "export": {"quantizer": "int8", "format": "tflite", "path": "out/model.tflite"}
  })");
}

std::string nested(char open, char close, int depth, const std::string& inner = "1") {
  std::string text;
  for (int i = 0; i < depth; ++i) text += open == '{' ? std::string("{\"a\":") : std::string(1, open);
  text += inner;
  text += std::string(static_cast<size_t>(depth), close);
  return text;
}

// One hostile input: how to lay out the folder (manifest text and anything beside it), the command after
// `ramjet`, and what the refusal must show. "M" in args is the manifest's path.
struct Case {
  std::string name;
  std::function<void(const fs::path& dir)> prepare;
  std::vector<std::string> args;
  std::vector<std::string> needles;
  int exit_code = 2;
};

void write_manifest(const fs::path& dir, const nlohmann::json& doc) { write_file(dir / "m.json", doc.dump(1)); }
void write_base(const fs::path& dir) { write_manifest(dir, base_manifest()); }
std::function<void(const fs::path&)> text(std::string body) {
  return [body](const fs::path& dir) { write_file(dir / "m.json", body); };
}
std::function<void(const fs::path&)> edited(std::function<void(nlohmann::json&)> edit) {
  return [edit](const fs::path& dir) {
    auto doc = base_manifest();
    edit(doc);
    write_manifest(dir, doc);
  };
}

// `ramjet validate M --set P=V`: a value set from the command line, judged where a manifest value would be.
Case set_case(std::string name, std::string assignment, std::vector<std::string> needles) {
  return {std::move(name), write_base, {"validate", "M", "--set", std::move(assignment)}, std::move(needles)};
}

std::vector<Case> cases() {
  std::vector<Case> c;
  // ---- the file itself -----------------------------------------------------------------------------------------
  c.push_back({"EmptyFile", text(""), {"validate", "M"}, {"m.json", "not valid JSON at byte"}});
  c.push_back({"TruncatedObject", text("{\"data\": {\"train\":"), {"validate", "M"}, {"m.json", "not valid JSON at byte 19"}});
  c.push_back({"TrailingGarbage", text("{} x"), {"validate", "M"}, {"m.json", "not valid JSON at byte 4"}});
  c.push_back({"NulByte", text(std::string("{\"seed\": 1\0}", 12)), {"validate", "M"}, {"m.json", "not valid JSON at byte"}});
  c.push_back({"IllFormedUtf8", text("{\"seed\": \"\xff\xfe\"}"), {"validate", "M"}, {"m.json", "not valid JSON at byte"}});
  c.push_back({"NumberBeyondDouble", text("{\"seed\": 1e400}"), {"validate", "M"}, {"m.json", "not valid JSON"}});
  c.push_back({"DuplicateTopLevelKey", text("{\"seed\": 1, \"seed\": 2}"), {"validate", "M"}, {"m.json", "duplicate key at /seed"}});
  c.push_back({"DuplicateNestedKey",
               [](const fs::path& dir) {
                 std::string t = base_manifest().dump();
                 const std::string from = "\"batch\":16";
                 t.replace(t.find(from), from.size(), "\"batch\":-1,\"batch\":32");
                 write_file(dir / "m.json", t);
               },
               {"validate", "M"},
               {"m.json", "duplicate key at /data/eval/batch"}});
  c.push_back({"DuplicateKeyInsideArray", text("{\"model\": {\"layers\": [{}, {\"type\": 1, \"type\": 2}]}}"),
               {"validate", "M"}, {"m.json", "duplicate key at /model/layers/1/type"}});
  c.push_back({"ArraysNested100kDeep", text(nested('[', ']', 100000)), {"validate", "M"}, {"m.json", "nested deeper than 128"}});
  c.push_back({"ObjectsNested100kDeep", text(nested('{', '}', 100000)), {"validate", "M"}, {"m.json", "nested deeper than 128"}});
  c.push_back({"NestedValueInAField",
               [](const fs::path& dir) {
                 std::string t = base_manifest().dump();
                 const std::string from = "\"seed\":3";
                 t.replace(t.find(from), from.size(), "\"seed\":" + nested('[', ']', 5000));
                 write_file(dir / "m.json", t);
               },
               {"validate", "M"},
               {"m.json", "nested deeper than 128 levels at /seed"}});
  c.push_back({"TopLevelArray", text("[1, 2]"), {"validate", "M"}, {"m.json"}});
  c.push_back({"TopLevelString", text("\"run\""), {"validate", "M"}, {"m.json"}});
  c.push_back({"ManifestIsAFolder", [](const fs::path& dir) { fs::create_directory(dir / "m.json"); }, {"validate", "M"},
               {"m.json", "not a regular file"}});
  c.push_back({"ManifestIsAFifo", [](const fs::path& dir) { mkfifo((dir / "m.json").c_str(), 0600); }, {"validate", "M"},
               {"m.json", "not a regular file"}});
  c.push_back({"ManifestMissing", [](const fs::path&) {}, {"validate", "M"}, {"m.json", "cannot open"}});
  c.push_back({"ManifestOf17MiB", text(std::string(17u << 20, ' ') + "{}"), {"validate", "M"},
               {"m.json", "more than a manifest may have"}});
  c.push_back({"TenMegabyteStringIsNotEchoedWhole", edited([](nlohmann::json& d) {
                 d["data"]["train"]["batch"] = std::string(10u << 20, 'x');
               }),
               {"validate", "M"}, {"m.json#/data/train/batch", "must be an integer", "xxx..."}});
  c.push_back({"LongUnknownKeyIsNotEchoedWhole", edited([](nlohmann::json& d) {
                 d["train"][std::string(1u << 20, 'k')] = 1;
               }),
               {"validate", "M"}, {"m.json#/train/"}});

  // ---- numbers a manifest may write -----------------------------------------------------------------------------
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"Zero", "0"}, {"Negative", "-1"}, {"Fraction", "2.5"}, {"Huge", "1e300"}, {"Int64Max", "9223372036854775807"},
           {"Uint64Max", "18446744073709551615"}, {"QuotedNumber", "\"32\""}, {"Null", "null"}, {"OverTheCap", "1048577"}})
    c.push_back(set_case("Batch" + name, "/data/train/batch=" + value, {"m.json#/data/train/batch"}));
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"HundredThousand", "100000"}, {"Zero", "0"}, {"Negative", "-4"}, {"Word", "many"}})
    c.push_back(set_case("Parallelism" + name, "/data/train/parallelism=" + value, {"m.json#/data/train/parallelism"}));
  c.push_back(set_case("PrefetchMillion", "/data/train/prefetch=1000000", {"m.json#/data/train/prefetch", "1024"}));
  c.push_back(set_case("PrefetchNegative", "/data/eval/prefetch=-1", {"m.json#/data/eval/prefetch"}));
  c.push_back(set_case("TrainThreadsHundredThousand", "/train/threads=100000", {"m.json#/train/threads", "per CPU"}));
  c.push_back(set_case("TrainThreadsNegative", "/train/threads=-1", {"m.json#/train/threads"}));
  c.push_back(set_case("BudgetCpuHundredThousand", "/data/train/budget={\"cpu\": 100000}", {"m.json#/data/train/budget/cpu"}));
  c.push_back(set_case("BudgetMemoryNegative", "/data/train/budget={\"memory_mb\": -5}", {"m.json#/data/train/budget/memory_mb"}));
  c.push_back(set_case("BudgetMemoryHuge", "/data/train/budget={\"memory_mb\": 1e18}", {"m.json#/data/train/budget/memory_mb"}));
  c.push_back(set_case("ShuffleNegative", "/data/train/shuffle=-1", {"m.json#/data/train/shuffle"}));
  c.push_back(set_case("EpochsZero", "/data/train/epochs=0", {"m.json#/data/train/epochs"}));
  c.push_back(set_case("TakeNegative", "/data/train/take=-1", {"m.json#/data/train/take"}));
  c.push_back(set_case("ShardIndexNotBelowCount", "/data/train/shard={\"count\": 2, \"index\": 2}", {"m.json#/data/train/shard/index"}));
  c.push_back(set_case("ShardCountZero", "/data/train/shard={\"count\": 0, \"index\": 0}", {"m.json#/data/train/shard/count"}));
  c.push_back(set_case("SeedWord", "/seed=\"abc\"", {"m.json#/seed"}));
  c.push_back(set_case("TrainEpochsZero", "/train/epochs=0", {"m.json#/train/epochs"}));
  c.push_back(set_case("LearningRateZero", "/train/optimizer/learning_rate=0", {"m.json#/train/optimizer/learning_rate"}));
  c.push_back(set_case("LearningRateNegative", "/train/optimizer/learning_rate=-0.1", {"m.json#/train/optimizer/learning_rate"}));
  c.push_back(set_case("CheckpointKeepZero", "/train/checkpoint/keep=0", {"m.json#/train/checkpoint/keep"}));
  c.push_back(set_case("CheckpointDirNumber", "/train/checkpoint/dir=5", {"m.json#/train/checkpoint/dir"}));
  c.push_back(set_case("ClipNormNegative", "/train/clip_norm=-1", {"m.json#/train/clip_norm"}));
  c.push_back(set_case("AccumulateZero", "/train/accumulate=0", {"m.json#/train/accumulate"}));

  // ---- the model: sizes whose arithmetic would overflow or whose memory would not exist -----------------------
  c.push_back(set_case("UnitsInt64Max", "/model/layers/2/units=9223372036854775807", {"m.json#/model/layers/2/units"}));
  c.push_back(set_case("UnitsZero", "/model/layers/2/units=0", {"m.json#/model/layers/2/units"}));
  c.push_back(set_case("UnitsBillion", "/model/layers/2/units=1000000000", {"m.json#/model/layers/2/units"}));
  c.push_back(set_case("UnitsFraction", "/model/layers/2/units=2.5", {"m.json#/model/layers/2/units"}));
  c.push_back(set_case("FiltersInt64Max", "/model/layers/0/filters=9223372036854775807", {"m.json#/model/layers/0/filters"}));
  c.push_back(set_case("KernelZero", "/model/layers/0/kernel=[0, 3]", {"m.json#/model/layers/0/kernel"}));
  c.push_back(set_case("KernelHuge", "/model/layers/0/kernel=4611686018427387904", {"m.json#/model/layers/0/kernel"}));
  c.push_back(set_case("KernelLargerThanInput", "/model/layers/0/kernel=9", {"m.json#/model/layers/0"}));
  c.push_back(set_case("StridesNegative", "/model/layers/0/strides=-2", {"m.json#/model/layers/0/strides"}));
  c.push_back(set_case("InputDimensionsHuge", "/model/input/image=[4611686018427387904, 4611686018427387904, 1]",
                       {"m.json#/model/input/image"}));
  c.push_back(set_case("InputElementsOver2To31", "/model/input/image=[65536, 65536, 4]", {"m.json#/model/input/image", "2^31"}));
  c.push_back(set_case("InputNegative", "/model/input/image=[-1, 4, 1]", {"m.json#/model/input/image"}));
  c.push_back(set_case("InputEmpty", "/model/input/image=[]", {"m.json#/model/input/image"}));
  c.push_back(set_case("ParametersBeyondMemory",
                       "/model/layers=[{\"type\": \"flatten\"}, {\"type\": \"dense\", \"units\": 16777216}, "
                       "{\"type\": \"dense\", \"units\": 16777216}]",
                       {"m.json#/model/layers/2", "would not fit in this machine's memory"}));
  c.push_back(set_case("ReshapeWords", "/model/layers/1={\"type\": \"reshape\", \"shape\": [\"a\"]}",
                       {"m.json#/model/layers/1/shape"}));
  c.push_back(set_case("ReshapeOverflow",
                       "/model/layers/1={\"type\": \"reshape\", \"shape\": [4294967296, 4294967296, -1]}",
                       {"m.json#/model/layers/1/shape"}));
  c.push_back(set_case("UnknownLayerType", "/model/layers/0/type=denze", {"m.json#/model/layers/0/type"}));
  c.push_back(set_case("LayerNotAnObject", "/model/layers/0=7", {"m.json#/model/layers/0"}));
  c.push_back(set_case("LayersEmpty", "/model/layers=[]", {"m.json#/model/layers"}));
  c.push_back(set_case("UnknownLoss", "/model/loss/type=hinge", {"m.json#/model/loss/type"}));

  // ---- components named in the manifest -------------------------------------------------------------------------
  c.push_back(set_case("UnknownSource", "/data/train/source/type=idxx", {"m.json#/data/train/source", "idxx"}));
  c.push_back(set_case("UnknownTransform", "/data/train/map/0/type=normalise", {"m.json#/data/train/map/0", "normalise"}));
  c.push_back(set_case("UnknownBackend", "/train/backend=gpu9", {"m.json#/train/backend", "gpu9"}));
  c.push_back(set_case("UnknownPrecision", "/train/precision=mixed_bfloat61", {"m.json#/train/precision", "mixed_bfloat61"}));
  c.push_back(set_case("UnknownOptimizer", "/train/optimizer/type=adamw9", {"m.json#/train/optimizer"}));
  c.push_back(set_case("UnknownQuantizer", "/export/quantizer=int3", {"m.json#/export"}));
  c.push_back(set_case("SyntheticCountNegative", "/data/train/source/count=-5", {"m.json#/data/train/source/count"}));

  // ---- --set itself ---------------------------------------------------------------------------------------------
  c.push_back(set_case("SetIndexBillion", "/data/train/map/999999999=1", {"--set", "past the end of an array of 1"}));
  c.push_back(set_case("SetIndexNegative", "/data/train/map/-1=1", {"--set", "is not an array index"}));
  c.push_back(set_case("SetIndexLeadingZero", "/data/train/map/01=1", {"--set", "is not an array index"}));
  c.push_back(set_case("SetIndexHuge", "/model/layers/99999999999999999999999=1", {"--set", "is not an array index"}));
  c.push_back(set_case("SetNoEquals", "/data/train/batch", {"--set", "expected POINTER=VALUE"}));
  c.push_back(set_case("SetNoPointer", "batch=3", {"--set", "expected POINTER=VALUE"}));
  c.push_back(set_case("SetBadEscape", "/data/tr~2in/batch=3", {"--set", "not a JSON pointer"}));
  c.push_back(set_case("SetThroughAScalar", "/data/train/batch/inner=3", {"--set", "/data/train/batch/inner"}));
  c.push_back(set_case("SetDuplicateKeyInValue", "/data/train/budget={\"cpu\": 1, \"cpu\": 2}", {"--set", "duplicate key at /cpu"}));
  c.push_back(set_case("SetDeepValue", "/seed=" + nested('[', ']', 1000), {"--set", "nested deeper than 128"}));
  c.push_back(set_case("SetBrokenJson", "/data/train/budget={\"cpu\":", {"--set", "not valid JSON at byte"}));
  c.push_back(set_case("SetHugeValueNotEchoed", "/data/train/batch=" + std::string(100000, '7'),
                       {"m.json#/data/train/batch", "..."}));

  // ---- outputs that could only fail after the work --------------------------------------------------------------
  c.push_back({"ExportPathIsAFolder",
               [](const fs::path& dir) {
                 write_base(dir);
                 fs::create_directories(dir / "out/model.tflite");
               },
               {"run", "M"},
               {"m.json#/export/path", "is a folder"}});
  c.push_back({"ExportFolderUnderAFile",
               [](const fs::path& dir) {
                 write_base(dir);
                 write_file(dir / "out", "a file where the folder should be");
               },
               {"run", "M"},
               {"m.json#/export/path", "cannot create the folder"}});
  c.push_back({"ReportPathIsAFolder",
               [](const fs::path& dir) {
                 write_base(dir);
                 fs::create_directories(dir / "report.json");
               },
               {"run", "M", "--report", "report.json"},
               {"--report", "is a folder"}});
  c.push_back({"ReportUnderAFile",
               [](const fs::path& dir) {
                 write_base(dir);
                 write_file(dir / "notdir", "x");
               },
               {"run", "M", "--report", "notdir/report.json"},
               {"--report", "cannot create the folder"}});

  // ---- command-line values --------------------------------------------------------------------------------------
  for (const auto& [name, flag, value] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"EvalBatchZero", "--batch", "0"},
           {"EvalBatchNegative", "--batch", "-3"},
           {"EvalBatchOverTheCap", "--batch", "1048577"},
           {"EvalBatchWord", "--batch", "abc"},
           {"EvalBatchBeyondInt64", "--batch", "99999999999999999999"},
           {"EvalThreadsZero", "--threads", "0"},
           {"EvalThreadsHundredThousand", "--threads", "100000"},
           {"EvalThreadsNegative", "--threads", "-1"},
           {"EvalPrecisionUnknown", "--precision", "int4"}})
    c.push_back({name, write_base, {"eval", "M", flag, value}, {flag == "--precision" ? "int4" : flag}});
  // --predictions names a folder; a file in its place cannot become one.
  c.push_back({"EvalPredictionsIntoAFile",
               [](const fs::path& dir) {
                 write_base(dir);
                 write_file(dir / "p.bin", "not a folder");
               },
               {"eval", "M", "--predictions", "p.bin"},
               {"--predictions", "p.bin"}});
  c.push_back({"EvalCheckpointMissing", write_base, {"eval", "M", "--checkpoint", "absent.safetensors"},
               {"absent.safetensors"}});
  c.push_back({"UnknownFlag", write_base, {"run", "M", "--no-such-flag"}, {"--no-such-flag"}});
  c.push_back({"UnknownCommand", write_base, {"frobnicate"}, {"frobnicate"}});
  c.push_back({"PipelineNameUnknown", write_base, {"pipeline", "M", "--name", "test"}, {"test"}});
  return c;
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// The host with the stock plugins on its search path, set for the child only (other tests set their own).
std::vector<std::string> host_argv() {
  return {"/usr/bin/env", "RAMJET_PLUGIN_PATH=" + stock_plugin_dir().string(), host_binary().string()};
}

class ManifestHostile : public ::testing::TestWithParam<Case> {};

TEST_P(ManifestHostile, IsRefusedCleanly) {
  const Case& c = GetParam();
  TempDir dir;
  c.prepare(dir.path());
  std::vector<std::string> argv = host_argv();
  for (const auto& a : c.args) argv.push_back(a == "M" ? (dir / "m.json").string() : a);
  HostileLimits limits;
  limits.working_dir = dir.path();
  limits.seconds = 60;
  const HostileResult r = run_hostile(argv, limits);
  EXPECT_TRUE(refused_cleanly(r, c.exit_code, c.needles));
  // Nothing was trained, so nothing may have been written: no checkpoint, no export, no report.
  EXPECT_FALSE(fs::exists(dir / "ckpt")) << r.output.substr(0, 2000);
  EXPECT_FALSE(fs::is_regular_file(dir / "out/model.tflite"));
  EXPECT_FALSE(fs::is_regular_file(dir / "report.json"));
}

INSTANTIATE_TEST_SUITE_P(Cases, ManifestHostile, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// A killed export leaves ".model.tflite.tmp<N>" beside the destination; the next run removes it before training,
// and an export destination that cannot be written is found before training, not after it.
TEST(ManifestHostileOutputs, StaleTemporariesAreRemovedBeforeTraining) {
  TempDir dir;
  write_file(dir / "m.json", base_manifest().dump());
  fs::create_directories(dir / "out");
  write_file(dir / "out/.model.tflite.tmp123456", "left by a killed run");
  write_file(dir / "out/.model.tflite.tmpnotdigits", "not ours to remove");
  HostileLimits limits;
  limits.working_dir = dir.path();
  auto host = [](std::vector<std::string> args) {
    std::vector<std::string> argv = host_argv();
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  };
  // Validation writes nothing: the stale file stays.
  const auto refused = run_hostile(host({"validate", (dir / "m.json").string()}), limits);
  ASSERT_EQ(refused.exit_code, 0) << refused.output;
  EXPECT_TRUE(fs::exists(dir / "out/.model.tflite.tmp123456")) << "validate must not touch outputs";
  const auto r = run_hostile(host({"run", (dir / "m.json").string(), "--set", "/train/epochs=1", "--set",
                                    "/export/path=out/model.tflite", "--set", "/model/layers/2/units=9999999999"}),
                             limits);
  EXPECT_TRUE(refused_cleanly(r, 2, {"m.json#/model/layers/2/units"}));
  EXPECT_TRUE(fs::exists(dir / "out/.model.tflite.tmp123456")) << "an invalid manifest must not touch outputs";
  const auto ok = run_hostile(host({"run", (dir / "m.json").string(), "--quiet"}), limits);
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_FALSE(fs::exists(dir / "out/.model.tflite.tmp123456"));
  EXPECT_TRUE(fs::exists(dir / "out/.model.tflite.tmpnotdigits"));
  EXPECT_TRUE(fs::is_regular_file(dir / "out/model.tflite"));
}

}  // namespace
