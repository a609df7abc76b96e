// The CPUs a thread may run on, read and set: for the tests of the cpu backend's thread pinning.
#pragma once

#include <gtest/gtest.h>
#include <sched.h>

#include <vector>

namespace ramjet::test {

// The CPUs thread `tid` (0: the calling thread) may run on, in order; empty where they cannot be read.
inline std::vector<int> cpus_of(pid_t tid) {
  cpu_set_t mask;
  std::vector<int> cpus;
  if (sched_getaffinity(tid, sizeof mask, &mask) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &mask)) cpus.push_back(cpu);
  return cpus;
}

// Keeps the calling thread to `cpus`; false where the kernel refuses.
inline bool keep_to(const std::vector<int>& cpus) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  for (int cpu : cpus) CPU_SET(cpu, &mask);
  return sched_setaffinity(0, sizeof mask, &mask) == 0;
}

// A test whose thread keeps to two CPUs (two_), so that the backend sees a two-CPU machine whatever this one has;
// the thread's CPUs are given back after. Skipped where the process may run on fewer than two.
class OnTwoCpus : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::vector<int> all = cpus_of(0);
    if (all.size() < 2) GTEST_SKIP() << "needs a process that may run on two CPUs; this one may run on " << all.size();
    original_ = all;
    two_ = {all[0], all[1]};
    ASSERT_TRUE(keep_to(two_));
  }
  void TearDown() override {
    if (!original_.empty()) {
      EXPECT_TRUE(keep_to(original_));
    }
  }

  std::vector<int> original_, two_;
};

}  // namespace ramjet::test
