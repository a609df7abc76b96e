// The installed SDK is enough to build a plugin out of tree, and the installed host finds and runs it.
#include "test_support.hpp"

#include <gtest/gtest.h>

using namespace ramjet::test;

TEST(InstalledSdk, OutOfTreePluginBuildsAgainstThePrefixAndRuns) {
  TempDir tmp;
  const fs::path prefix = tmp / "prefix";
  const std::string cmake = quote(RAMJET_TEST_CMAKE);
  auto step = [](const std::string& what, const std::string& command) {
    auto r = run(command);
    EXPECT_EQ(r.exit_code, 0) << what << " failed:\n$ " << command << "\n" << r.output;
    return r;
  };

  step("installing ramjet", cmake + " --install " + quote(binary_dir().string()) + " --prefix " + quote(prefix.string()));
  for (const char* installed : {"bin/ramjet", "include/ramjet/abi.h", "include/ramjet/sdk.hpp",
                                "lib/cmake/ramjet/ramjetConfig.cmake", "lib/ramjet/plugins/stock_sources.json",
                                "lib/ramjet/plugins/libramjet_stock_transforms.so"})
    EXPECT_TRUE(fs::exists(prefix / installed)) << installed;

  // Configure against the prefix alone: no path into this source or build tree.
  const fs::path build = tmp / "template-build";
  step("configuring the template",
       cmake + " -S " + quote((source_dir() / "examples/plugin-template").string()) + " -B " + quote(build.string()) +
           " -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=" + quote(prefix.string()));
  step("building the template", cmake + " --build " + quote(build.string()));
  step("installing the template", cmake + " --install " + quote(build.string()) + " --prefix " + quote(prefix.string()));
  ASSERT_FALSE(::testing::Test::HasFailure());

  const std::string host = "env -u RAMJET_PLUGIN_PATH -u RAMJET_PLUGINS_SELECT -u RAMJET_PLUGINS_DISABLE " +
                           quote((prefix / "bin/ramjet").string());
  auto listing = step("listing plugins", host + " plugins --json");
  auto json = nlohmann::json::parse(listing.output);
  bool found = false;
  for (const auto& p : json["plugins"]) {
    if (p["name"] != "template_invert") continue;
    found = true;
    EXPECT_EQ(p["status"], "ok");
    EXPECT_EQ(p["components"]["transform"], nlohmann::json{"invert"});
    EXPECT_EQ(p["library"], (prefix / "lib/ramjet/plugins/libramjet_template_invert.so").string());
  }
  EXPECT_TRUE(found) << listing.output;

  auto exports = step("reading exports", "nm -D --defined-only --extern-only " +
                                             quote((prefix / "lib/ramjet/plugins/libramjet_template_invert.so").string()));
  EXPECT_NE(exports.output.find("ramjet_plugin_entry"), std::string::npos);
  EXPECT_EQ(std::count(exports.output.begin(), exports.output.end(), '\n'), 1) << exports.output;

  // Synthetic uint8 values in [0, 16) inverted against 255 land in (239, 255].
  const fs::path report = tmp / "report.json";
  step("running the template pipeline",
       host + " run " + quote((source_dir() / "examples/plugin-template/pipeline.json").string()) + " --report " +
           quote(report.string()));
  auto r = nlohmann::json::parse(read_file(report));
  const auto& image = r["data"]["train"]["tensors"]["image"];
  EXPECT_EQ(r["data"]["train"]["elements"], 256);
  EXPECT_GE(image["min"].get<double>(), 240.0);
  EXPECT_EQ(image["max"].get<double>(), 255.0);

  // A third party's precision policy takes its configuration object and trains through `ramjet run`.
  if (!fs::exists(prefix / "lib/ramjet/plugins/onednn.json"))
    GTEST_SKIP() << "the onednn plugin (the cpu backend) is not built here; the training half of this test needs it";
  const fs::path manifest = source_dir() / "examples/plugin-template/train.json";
  const fs::path train_report = tmp / "train-report.json";
  step("training with the template's precision policy",
       host + " run " + quote(manifest.string()) + " --quiet --report " + quote(train_report.string()));
  auto t = nlohmann::json::parse(read_file(train_report))["train"];
  EXPECT_EQ(t["precision"], "fixed_precision");
  EXPECT_EQ(t["components"]["precision_policy"]["plugin"], "template_invert");
  EXPECT_EQ(t["steps"], 48);  // 512 samples / batch 32 × 3 epochs
  EXPECT_LT(t["history"][2]["loss"].get<double>(), t["history"][0]["loss"].get<double>());
  // An unknown key in the policy's configuration is reported at validate time, with its pointer.
  auto bad = run(host + " validate " + quote(manifest.string()) + " --set /train/precision/loss_scael=4");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("train.json#/train/precision/loss_scael: unknown field 'loss_scael' (did you mean "
                            "'loss_scale'?)"),
            std::string::npos)
      << bad.output;
}
