// The `ramjet` command as a user meets it: exit codes 0/2/1, JSON listing, validation with pointers, --set,
// --report, and no crash on anything.
#include "test_support.hpp"

#include <gtest/gtest.h>

using namespace ramjet::test;

namespace {

// Runs the host with a controlled plugin path: the stock plugins plus any extra directories.
CommandResult host(const std::string& args, const std::string& extra_path = "") {
  std::string path = extra_path.empty() ? stock_plugin_dir().string() : extra_path + ":" + stock_plugin_dir().string();
  return run("env RAMJET_PLUGIN_PATH=" + quote(path) + " " + quote(host_binary().string()) + " " + args);
}

void contains(const std::string& text, const std::string& words) {
  EXPECT_NE(text.find(words), std::string::npos) << "expected \"" << words << "\" in:\n" << text;
}

nlohmann::json synthetic_manifest() {
  return {{"seed", 3},
          {"data",
           {{"train",
             {{"source",
               {{"type", "synthetic"},
                {"count", 50},
                {"tensors",
                 {{"image", {{"shape", {4, 4, 1}}, {"dtype", "uint8"}, {"low", 0}, {"high", 256}}},
                  {"label", {{"shape", nlohmann::json::array()}, {"dtype", "int32"}, {"low", 0}, {"high", 5}}}}}}},
              {"map", {{{"type", "normalize"}, {"scale", 1.0 / 255}}}},
              {"batch", 8}}}}}};
}

}  // namespace

TEST(HostCli, VersionAndHelp) {
  auto v = host("--version");
  EXPECT_EQ(v.exit_code, 0);
  contains(v.output, "ramjet 0.1.0 (plugin ABI 3)");
  auto h = host("--help");
  EXPECT_EQ(h.exit_code, 0);
  contains(h.output, "validate MANIFEST");
  contains(h.output, "report RUN.json... -o FILE");
  contains(h.output, "exit codes: 0 success, 2 bad usage or invalid input, 1 runtime failure");
}

TEST(HostCli, BadUsageExitsTwo) {
  EXPECT_EQ(host("").exit_code, 2);
  EXPECT_EQ(host("frobnicate").exit_code, 2);
  EXPECT_EQ(host("run").exit_code, 2);
  EXPECT_EQ(host("run a.json --no-such-flag").exit_code, 2);
  EXPECT_EQ(host("report").exit_code, 2);
  EXPECT_EQ(host("report a.json -o r.html --no-such-flag").exit_code, 2);
}

TEST(HostCli, PluginsJsonListsEveryFieldPerPlugin) {
  auto r = host("plugins --json", fixture_dir("entry_fails").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto listing = nlohmann::json::parse(r.output);
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& p : listing["plugins"]) by_name[p["name"]] = p;
  ASSERT_TRUE(by_name.count("stock_sources")) << r.output;
  ASSERT_TRUE(by_name.count("entry_fails")) << r.output;
  const auto& s = by_name["stock_sources"];
  EXPECT_EQ(s["version"], "0.1.0");
  EXPECT_EQ(s["abi"], (nlohmann::json{{"min", 3}, {"max", 3}}));
  EXPECT_EQ(s["library"], (stock_plugin_dir() / "libramjet_stock_sources.so").string());
  // npz needs libzip, which ./dev installs.
  EXPECT_EQ(s["components"]["data_source"], (nlohmann::json{"idx", "synthetic", "npy", "csv", "npz"}));
  EXPECT_EQ(s["status"], "ok");
  EXPECT_FALSE(s.contains("load")) << "plain listing must not load libraries";
}

TEST(HostCli, PluginsLoadExitsOneWhenAPluginFailsToLoad) {
  auto r = host("plugins --load", fixture_dir("entry_fails").string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  contains(r.output, "load: FAILED");
  contains(r.output, "no CUDA device found");
  EXPECT_EQ(host("plugins --load").exit_code, 0);
}

TEST(HostCli, ValidateReportsEveryProblemWithFileAndPointer) {
  TempDir dir;
  auto doc = synthetic_manifest();
  doc["data"]["train"]["batch"] = 0;
  doc["data"]["train"]["map"][0]["type"] = "no_such_transform";
  doc["data"]["train"]["shuffle"] = "yes";
  doc["bogus"] = true;
  write_file(dir / "bad.json", doc.dump());
  auto r = host("validate " + quote((dir / "bad.json").string()));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  const std::string file = (dir / "bad.json").string();
  contains(r.output, "4 problems in " + file);
  contains(r.output, file + "#/bogus: unknown field");
  contains(r.output, file + "#/data/train/batch: must be >= 1, got 0");
  contains(r.output, file + "#/data/train/map/0/type: no plugin provides transform 'no_such_transform'");
  contains(r.output, file + "#/data/train/shuffle: must be an integer, got \"yes\"");
}

TEST(HostCli, ValidateRejectsMalformedJsonWithByteOffset) {
  TempDir dir;
  write_file(dir / "broken.json", "{\"data\": {\"train\": }");
  auto r = host("validate " + quote((dir / "broken.json").string()));
  EXPECT_EQ(r.exit_code, 2);
  contains(r.output, (dir / "broken.json").string() + ": not valid JSON at byte 20");
  auto missing = host("validate " + quote((dir / "absent.json").string()));
  EXPECT_EQ(missing.exit_code, 2);
  contains(missing.output, "absent.json: cannot open: no such file");
}

TEST(HostCli, RunWritesAReportAndHonoursSet) {
  TempDir dir;
  write_file(dir / "p.json", synthetic_manifest().dump());
  auto r = host("run " + quote((dir / "p.json").string()) + " --report " + quote((dir / "report.json").string()) +
                  " --set /data/train/batch=16 --set /data/train/epochs=2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  contains(r.output, "train: 100 elements in 8 batches");
  auto report = nlohmann::json::parse(read_file(dir / "report.json"));
  const auto& train = report["data"]["train"];
  EXPECT_EQ(train["batch"], 16);
  EXPECT_EQ(train["elements"], 100);
  EXPECT_EQ(train["batches"], 8);  // 50 = 3×16 + 2 per epoch, two epochs
  EXPECT_EQ(train["tensors"]["image"]["dtype"], "float32");
  EXPECT_LE(train["tensors"]["image"]["max"].get<double>(), 1.0);
  EXPECT_EQ(train["tensors"]["label"]["histogram"].size(), 5u);
}

TEST(HostCli, BadSetIsUsageError) {
  TempDir dir;
  write_file(dir / "p.json", synthetic_manifest().dump());
  auto r = host("run " + quote((dir / "p.json").string()) + " --set data/train/batch=3");
  EXPECT_EQ(r.exit_code, 2);
  contains(r.output, "expected POINTER=VALUE");
  auto invalid = host("run " + quote((dir / "p.json").string()) + " --set /data/train/batch=-1");
  EXPECT_EQ(invalid.exit_code, 2);
  contains(invalid.output, "#/data/train/batch: must be >= 1, got -1");
}

TEST(HostCli, PluginLoadFailureAtRunIsRuntimeFailure) {
  TempDir dir;
  auto doc = synthetic_manifest();
  doc["data"]["train"]["map"] = {{{"type", "never"}}};
  write_file(dir / "p.json", doc.dump());
  auto r = host("run " + quote((dir / "p.json").string()), fixture_dir("entry_fails").string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  contains(r.output, "cannot load plugin 'entry_fails'");
}

TEST(HostCli, AnUnwritableReportIsRefusedBeforeTheRunNamingTheFile) {
  // Found before the work that would end in writing it: exit 2 at once, and the folder is named.
  TempDir dir;
  write_file(dir / "p.json", synthetic_manifest().dump());
  const std::string unwritable = "/proc/ramjet-no-such-place/report.json";
  auto r = host("run " + quote((dir / "p.json").string()) + " --report " + unwritable);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  contains(r.output, "--report: cannot create the folder /proc/ramjet-no-such-place");
  EXPECT_EQ(r.output.find("epoch"), std::string::npos) << "nothing may run first: " << r.output;
  auto ok = host("run " + quote((dir / "p.json").string()) + " --quiet --report " + quote((dir / "r.json").string()));
  EXPECT_EQ(ok.exit_code, 0) << "the same run with a writable report must pass: " << ok.output;
}

TEST(HostCli, CorruptDatasetIsInvalidInputNotACrash) {
  TempDir dir;
  write_file(dir / "images.idx", std::string("\x00\x00\x08\x03\x00\x00\x00\x05\x00\x00\x00\x02\x00\x00\x00\x02", 16) +
                                     "abc");  // promises 5 items of 4 bytes, holds 3 bytes
  nlohmann::json doc = {{"data", {{"train", {{"source", {{"type", "idx"}, {"images", "images.idx"}}}}}}}};
  write_file(dir / "p.json", doc.dump());
  auto r = host("run " + quote((dir / "p.json").string()));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  contains(r.output, (dir / "images.idx").string());
  contains(r.output, "truncated");
  contains(r.output, "#/data/train/source");
}

TEST(HostCli, LoaderDebugExplainsDecisions) {
  auto r = run("env RAMJET_LOADER_DEBUG=1 RAMJET_PLUGIN_PATH=" + quote(stock_plugin_dir().string()) +
               " RAMJET_PLUGINS_DISABLE=stock_transforms " + quote(host_binary().string()) + " plugins");
  EXPECT_EQ(r.exit_code, 0);
  contains(r.output, "ramjet: loader: searching " + stock_plugin_dir().string());
  contains(r.output, "stock_transforms.json: skipped: disabled by RAMJET_PLUGINS_DISABLE");
}

// RAMJET_LOG_LEVEL: debug shows the backend's plan lines, which are hidden by default, and a word that is no level
// is a usage error naming the variable and the words it takes.
TEST(HostCli, LogLevelFromTheEnvironment) {
  TempDir dir;
  nlohmann::json doc = synthetic_manifest();
  doc["model"] = {{"input", {{"image", {4, 4, 1}}}},
                  {"layers", {{{"type", "flatten"}}, {{"type", "dense"}, {"units", 5}}}},
                  {"loss", {{"type", "sparse_softmax_cross_entropy"}}}};
  doc["train"] = {{"backend", "cpu"}, {"threads", 1}, {"optimizer", {{"type", "sgd"}, {"learning_rate", 0.1}}},
                  {"epochs", 1}, {"checkpoint", {{"dir", (dir / "checkpoints").string()}}}};
  write_file(dir / "p.json", doc.dump());
  const std::string binary = quote(host_binary().string()), manifest = quote((dir / "p.json").string());
  const std::string path = "RAMJET_PLUGIN_PATH=" + quote(stock_plugin_dir().string());
  auto debug = run("env " + path + " RAMJET_LOG_LEVEL=debug " + binary + " run " + manifest);
  ASSERT_EQ(debug.exit_code, 0) << debug.output;
  contains(debug.output, "ramjet: debug [onednn]: training batch 8");
  auto plain = run("env " + path + " " + binary + " run " + manifest);
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_EQ(plain.output.find("ramjet: debug"), std::string::npos) << plain.output;
  auto bad = run("env " + path + " RAMJET_LOG_LEVEL=loud " + binary + " run " + manifest);
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  contains(bad.output, "RAMJET_LOG_LEVEL must be debug, info, warning or error, got 'loud'");
}

TEST(HostCli, DefaultPipelineRunsOnRealData) {
  auto r = host("run " + quote((source_dir() / "examples/fashion_mnist/inspect.json").string()) +
                  " --set /data/train/source/images=" + quote(fashion_mnist("t10k-images-idx3-ubyte.gz").string()) +
                  " --set /data/train/source/labels=" + quote(fashion_mnist("t10k-labels-idx1-ubyte.gz").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  contains(r.output, "train: 10000 elements in 79 batches");
  contains(r.output, "eval: 10000 elements in 40 batches");
  contains(r.output, "classes 10");
}
