// The cpu backend's loops in a pinned team (plugins/onednn/loop_share.hpp): a thread that has finished its part of
// a loop moves a thread still in it whose CPU time stands still onto its own CPU and sleeps until that one has
// finished; the moved thread is back on its own CPU when its next loop begins; and outside a pinned team (also once
// a pinned scope has closed) nothing moves. A lane that sleeps stands in for one that waits while another process holds its CPU: its CPU time stands
// still all the same.
#include "../plugins/onednn/loop_share.hpp"
#include "../plugins/onednn/thread_scope.hpp"
#include "cpu_masks.hpp"

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
using ramjet::test::cpus_of;
using ramjet::test::keep_to;

namespace {

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
        seen.late_cpus_at_start = cpus_of(0);
        looked = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        seen.late_cpus_at_end = cpus_of(0);
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

class OnednnLoopShare : public ramjet::test::OnTwoCpus {};

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
