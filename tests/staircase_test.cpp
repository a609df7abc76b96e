// The staircase as users run it: examples/staircase/run.sh trains every step (briefly here; the last on two
// local ranks), skips only a step the CPU cannot run, and writes one HTML page comparing the steps it ran.
#include "test_support.hpp"

#include <gtest/gtest.h>

using namespace ramjet::test;

TEST(Staircase, OneCommandRunsEveryStepAndWritesTheComparison) {
  TempDir dir;
  const fs::path out = dir / "staircase";
  const auto r = run("env RAMJET_PLUGIN_PATH=" + quote(stock_plugin_dir().string()) + " " +
                     quote((source_dir() / "examples/staircase/run.sh").string()) + " " +
                     quote(host_binary().string()) + " " + quote(out.string()) +
                     " --set /data/train/take=512 --set /data/eval/take=256 --set /train/epochs=2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::vector<std::string> steps = {"1_plain", "2_pipeline", "3_mixed_bfloat16", "4_two_ranks"};
  size_t ran = 0;
  for (const auto& step : steps) {
    if (fs::exists(out / (step + ".json"))) {
      ++ran;
      continue;
    }
    // Only mixed_bfloat16 may be missing, and only with the backend's reason for this CPU.
    EXPECT_EQ(step, "3_mixed_bfloat16") << r.output;
    EXPECT_NE(r.output.find("== " + step + " skipped: this CPU cannot run it"), std::string::npos) << r.output;
    EXPECT_NE(read_file(out / (step + ".log")).find("needs a CPU with AVX-512"), std::string::npos);
  }
  ASSERT_GE(ran, 3u);
  const std::string page = read_file(out / "staircase.html");
  // Loss and accuracy (training and validation), learning rate and samples/s: six series per run.
  EXPECT_EQ(count_occurrences(page, "class=\"series\""), 6 * ran) << page.substr(0, 2000);
  EXPECT_NE(page.find("plain"), std::string::npos);
  EXPECT_NE(page.find("pipeline"), std::string::npos);
}
