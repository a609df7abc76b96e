// The oneDNN backend's thread tuner (plugins/onednn/thread_tuner.hpp) fed step times: it stays on the configured
// threads on a quiet machine, moves to one thread when steps slow down and one thread is faster, comes back when
// the machine is quiet again, and never moves when it is off.
#include "../plugins/onednn/thread_tuner.hpp"

#include <gtest/gtest.h>

#include <functional>

using onednn::ThreadTuner;

namespace {

// Runs `steps` training steps whose time depends on the thread count the tuner chose; counts steps per count.
std::pair<int, int> run(ThreadTuner& tuner, int steps, const std::function<double(int)>& seconds) {
  int on_two = 0, on_one = 0;
  for (int i = 0; i < steps; ++i) {
    const int threads = tuner.threads();
    (threads == 1 ? on_one : on_two)++;
    tuner.step_done(seconds(threads));
  }
  return {on_two, on_one};
}

}  // namespace

TEST(OnednnThreadTuner, QuietMachineKeepsTheConfiguredThreadsAndProbesLessAndLessOften) {
  ThreadTuner tuner(2, true);
  const auto quiet = [](int threads) { return threads == 2 ? 0.010 : 0.018; };
  const auto [on_two, on_one] = run(tuner, 4000, quiet);
  EXPECT_EQ(tuner.threads(), 2);
  EXPECT_GT(on_one, 0) << "it tries one thread now and then";
  EXPECT_LT(on_one, 4000 / 50) << "probes grow rarer: under 2% of the steps";
}

TEST(OnednnThreadTuner, ABusyMachineMovesItToOneThreadAndAQuietOneBack) {
  ThreadTuner tuner(2, true);
  run(tuner, 100, [](int threads) { return threads == 2 ? 0.010 : 0.018; });
  ASSERT_EQ(tuner.threads(), 2);
  // Another process takes a core: two threads now wait on the shared one.
  const auto busy = [](int threads) { return threads == 2 ? 0.020 : 0.014; };
  run(tuner, 40, busy);
  EXPECT_EQ(tuner.threads(), 1) << "a 2x slowdown is noticed within a few windows";
  const auto [on_two, on_one] = run(tuner, 1000, busy);
  EXPECT_EQ(tuner.threads(), 1);
  EXPECT_GT(on_one, 900) << "it stays on one thread while the machine is busy";
  // The other process ends.
  run(tuner, 3000, [](int threads) { return threads == 2 ? 0.010 : 0.018; });
  EXPECT_EQ(tuner.threads(), 2) << "a scheduled probe finds two threads faster again";
}

TEST(OnednnThreadTuner, OffOrOneThreadNeverMoves) {
  for (auto [configured, enabled] : {std::pair{2, false}, std::pair{1, true}}) {
    ThreadTuner tuner(configured, enabled);
    const auto [on_two, on_one] = run(tuner, 500, [](int threads) { return threads == 1 ? 0.001 : 0.1; });
    EXPECT_EQ(tuner.threads(), configured);
    EXPECT_EQ(configured == 1 ? on_one : on_two, 500);
  }
}
