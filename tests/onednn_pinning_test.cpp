// The "cpu" backend's thread pinning (plugins/onednn/thread_scope.hpp), seen from inside a call through a tap:
// which CPUs the calling thread and the process's other threads may run on while a forward runs, and after.
#include "onednn_harness.hpp"
#include "onednn_models.hpp"
#include "cpu_masks.hpp"

#include <gtest/gtest.h>

#include "ramjet/plugin/failure.hpp"

#include <dirent.h>
#include <sched.h>

#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <vector>

using namespace ramjet::core;
using namespace ramjet::test::cpu_backend;
using ramjet::test::cpus_of;
using ramjet::test::keep_to;

namespace {

// What a tap saw during the forward: the calling thread's CPUs, and every one-CPU mask of the process's threads.
struct Seen {
  std::vector<int> caller;
  std::multiset<int> single_cpu_threads;
};

ramjet_status look(void* user, const char*, const DLTensor*, ramjet_error*) {
  auto& seen = *static_cast<Seen*>(user);
  seen.caller = cpus_of(0);
  if (DIR* dir = opendir("/proc/self/task")) {
    while (dirent* entry = readdir(dir)) {
      if (entry->d_name[0] == '.') continue;
      const std::vector<int> cpus = cpus_of(static_cast<pid_t>(std::atoi(entry->d_name)));
      if (cpus.size() == 1) seen.single_cpu_threads.insert(cpus[0]);
    }
    closedir(dir);
  }
  return RAMJET_OK;
}

// A forward of the small CNN with a tap on its logits; `config` is the backend's. The test thread first keeps
// to two CPUs, so the backend sees a two-CPU machine whatever this one has.
class OnednnPinning : public ramjet::test::OnTwoCpus {
 protected:
  Seen forward_with(const json& config) {
    Seen seen;
    Harness h(config);
    EXPECT_TRUE(h.compile(small_cnn(), adam_options(4)).ok());
    Example params = random_params(small_cnn(), 10, 0.3f);
    EXPECT_TRUE(h.set_state("parameters", params).ok());
    EXPECT_TRUE(h.set_taps(json::array({"fc"}), &look, &seen).ok());
    std::mt19937 rng(31);
    Example batch = separable_batch(4, {8, 8, 1}, rng), out;
    EXPECT_TRUE(h.forward(batch, out, false).ok());
    after_ = cpus_of(0);
    return seen;
  }

  std::vector<int> after_;
};

}  // namespace

TEST_F(OnednnPinning, ThreadsAsManyAsTheCpusRunOneOnEachAndTheCallerGetsItsCpusBack) {
  const Seen seen = forward_with({{"threads", 2}});
  EXPECT_EQ(seen.caller, std::vector<int>{two_[0]});
  EXPECT_EQ(seen.single_cpu_threads.count(two_[0]), 1u);  // the caller itself
  EXPECT_EQ(seen.single_cpu_threads.count(two_[1]), 1u);  // OpenMP's second thread
  EXPECT_EQ(after_, two_);
}

TEST_F(OnednnPinning, FewerThreadsThanCpusAreLeftToTheKernel) {
  const Seen seen = forward_with({{"threads", 1}});
  EXPECT_EQ(seen.caller, two_);
  EXPECT_TRUE(seen.single_cpu_threads.empty());
}

// One process, as a host that trains on every CPU and then evaluates on one thread: the worker the first call
// pinned gets the CPUs back when the second does not pin.
TEST_F(OnednnPinning, AWorkerAnEarlierCallPinnedIsFreedByACallThatDoesNotPin) {
  const Seen pinned = forward_with({{"threads", 2}});
  ASSERT_EQ(pinned.single_cpu_threads.count(two_[1]), 1u);
  const Seen freed = forward_with({{"threads", 1}});
  EXPECT_EQ(freed.caller, two_);
  EXPECT_TRUE(freed.single_cpu_threads.empty());
}

TEST_F(OnednnPinning, PinThreadsFalseLeavesThemAlone) {
  const Seen seen = forward_with({{"threads", 2}, {"pin_threads", false}});
  EXPECT_EQ(seen.caller, two_);
  EXPECT_TRUE(seen.single_cpu_threads.empty());
}

TEST_F(OnednnPinning, TheUsersOwnOpenMpBindingWins) {
  setenv("OMP_PROC_BIND", "false", 1);  // libgomp binds nothing; ramjet must not either
  const Seen seen = forward_with({{"threads", 2}});
  unsetenv("OMP_PROC_BIND");
  EXPECT_EQ(seen.caller, two_);
  EXPECT_TRUE(seen.single_cpu_threads.empty());
}

TEST(OnednnBackend, PinThreadsMustBeABoolean) {
  EXPECT_THROW(Harness(json{{"pin_threads", "yes"}}), InvalidInput);
}
