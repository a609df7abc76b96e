// The cpu backend's loops in a pinned team (plugins/onednn/loop_share.hpp): a thread that has finished its part of
// a loop moves a thread still in it whose CPU time stands still onto its own CPU and sleeps until that one has
// finished; the moved thread is back on its own CPU when its next loop begins; and outside a pinned team (also once
// a pinned scope has closed) nothing moves. A lane that sleeps stands in for one that waits while another process holds its CPU: its CPU time stands
// still all the same.
#include "../plugins/onednn/loop_share.hpp"
#include "../plugins/onednn/thread_scope.hpp"

#include <gtest/gtest.h>

#include <omp.h>
#include <sched.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

using onednn::LoopShare;
using onednn::LoopTicket;
using onednn::ThreadScope;

namespace {

std::vector<int> cpus_of_this_thread() {
  cpu_set_t mask;
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof mask, &mask) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &mask)) cpus.push_back(cpu);
  return cpus;
}

void keep_to(const std::vector<int>& cpus) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  for (int cpu : cpus) CPU_SET(cpu, &mask);
  ASSERT_EQ(sched_setaffinity(0, sizeof mask, &mask), 0);
}

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + t.tv_nsec * 1e-9;
}

// What each lane saw in one loop of a two-thread team.
struct LoopSeen {
  std::vector<int> late_cpus_at_start, late_cpus_at_end;  // the late lane's mask as its part began, and as it ended
  double first_cpu_seconds = 0;                          // the other lane's CPU time from its start to the barrier
};

// One loop of a two-thread team in which one lane has nothing to do but wait until the `late` one has looked at its
// CPUs, and the late one then stands still for 30 ms.
LoopSeen loop_with_a_late_lane(int late = 1) {
  LoopSeen seen;
  std::atomic<bool> looked{false};
  const LoopTicket ticket;
#pragma omp parallel num_threads(2)
  {
    const double start = thread_cpu_seconds();
    {
      const LoopShare share(ticket);
      if (omp_get_thread_num() == late) {
        seen.late_cpus_at_start = cpus_of_this_thread();
        looked = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        seen.late_cpus_at_end = cpus_of_this_thread();
      } else {
        while (!looked) std::this_thread::yield();
      }
    }
    if (omp_get_thread_num() != late) seen.first_cpu_seconds = thread_cpu_seconds() - start;
  }
  return seen;
}

// A loop in which both lanes take part at once: afterwards each lane knows the other's thread.
void loop_of_two() {
  const LoopTicket ticket;
#pragma omp parallel num_threads(2)
  { const LoopShare share(ticket); }
}

class OnednnLoopShare : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::vector<int> all = cpus_of_this_thread();
    if (all.size() < 2) GTEST_SKIP() << "needs a process that may run on two CPUs; this one may run on " << all.size();
    original_ = all;
    two_ = {all[0], all[1]};
    keep_to(two_);
  }
  void TearDown() override {
    if (!original_.empty()) keep_to(original_);
  }

  std::vector<int> original_, two_;
};

TEST_F(OnednnLoopShare, AFinishedThreadTakesAStalledOneOntoItsCpuAndSleepsUntilItHasFinished) {
  ThreadScope scope(2, two_);
  loop_of_two();
  const LoopSeen seen = loop_with_a_late_lane();
  EXPECT_EQ(seen.late_cpus_at_start, std::vector<int>{two_[1]}) << "lane 1 runs pinned to the second CPU";
  EXPECT_EQ(seen.late_cpus_at_end, std::vector<int>{two_[0]}) << "the stalled lane was moved onto lane 0's CPU";
  // Lane 0 waited 30 ms for lane 1; a spinning wait would have spent about that much CPU time.
  EXPECT_LT(seen.first_cpu_seconds, 0.010) << "lane 0 slept while it waited";

  const LoopSeen next = loop_with_a_late_lane();
  EXPECT_EQ(next.late_cpus_at_start, std::vector<int>{two_[1]}) << "the moved lane is back on its CPU at its next loop";
}

TEST_F(OnednnLoopShare, NothingMovesOutsideAPinnedTeam) {
  {
    ThreadScope scope(2);  // two threads, not pinned
    const LoopSeen seen = loop_with_a_late_lane();
    EXPECT_EQ(seen.late_cpus_at_start, seen.late_cpus_at_end);
    EXPECT_EQ(seen.late_cpus_at_end.size(), 2u);
  }
  {
    ThreadScope pinned(2, two_);
    loop_of_two();
  }
  // After a pinned scope has closed, its loops are no team's: a worker done first leaves the late calling thread
  // where it was.
  const LoopSeen after = loop_with_a_late_lane(/*late=*/0);
  EXPECT_EQ(after.late_cpus_at_start, two_);
  EXPECT_EQ(after.late_cpus_at_end, two_);
}

}  // namespace
