// What the threads of a pinned team (thread_scope.hpp) do for each other at the end of one of our parallel loops.
//
// Why: pinned, a thread whose CPU another process holds waits there for its turn, while a thread that has run out
// of the loop's items waits at the region's barrier on a CPU no one else may use. Beside one busy process, the 2
// vCPUs sat idle 14 % of the bench's ResNet training time, and a loop ended only when the busy process gave the
// late thread its CPU back. So a thread that has taken its last item watches the threads still in the loop: one
// whose CPU time stands still while it has not finished is moved onto this thread's CPU, and this thread sleeps
// until it has finished. Measured on the 2-vCPU Xeon, ResNet fp32 beside one busy process: 676 -> 726 samples/s
// over three pairs, and the bench's share of the quiet speed kept under load 0.556 -> 0.615 (docs/benchmarks.md,
// issue 14); quiet, no loss.
//
// What a thread computes does not change, only where it runs. A moved thread goes back to its own CPU when its
// next loop begins or a ThreadScope pins the team again. (Sending it back as soon as it had finished was slower:
// 690 against 753 samples/s, as it then waited for its own CPU to reach the barrier.)
#pragma once

#include <sched.h>

#include <atomic>
#include <cstdint>
#include <ctime>

namespace onednn {

// What the threads of one pinned team know of each other. ThreadScope fills it when it pins a team. One per thread
// that starts teams (own_team), so the teams of two host threads never mix.
struct PinnedTeam {
  static constexpr int kMaxLanes = 64;  // a larger team is pinned without one
  struct Lane {
    std::atomic<pid_t> tid{0};        // the lane's thread, for sched_setaffinity from the other lanes
    std::atomic<clockid_t> clock{0};  // its CPU-time clock
    // The last loop the lane's thread entered (its tid and clock are then its own) and the last it finished.
    std::atomic<uint32_t> entered{0}, finished{0};
    std::atomic<bool> sleeper{false};  // a lane sleeps on `finished`: wake it when it changes
    std::atomic<bool> moved{false};    // moved onto another lane's CPU; pinned back at its next loop
  };
  int size = 0;
  int cpu[kMaxLanes] = {};  // each lane's own CPU
  uint32_t loops = 0;       // loops numbered so far (LoopTicket), by the thread that starts the team's regions
  Lane lanes[kMaxLanes];
};

// The team the calling thread starts (its own, for as long as the thread lives).
PinnedTeam& own_team();
// The team the calling thread starts and has pinned now; null outside a ThreadScope that pinned.
PinnedTeam*& pinned_team();

// A loop's team and number, taken by the thread that starts the parallel region, just before it, and handed by
// every thread of the region to its LoopShare: so the threads agree on both, whatever libgomp did to its pool in
// between (it replaces the workers beyond a smaller team's size).
struct LoopTicket {
  LoopTicket();
  PinnedTeam* team;  // null where the caller has not pinned a team
  uint32_t loop;
};

// One thread's part in one of our parallel loops: made by every thread of the region first thing in it, and ended
// after the thread's last item of the loop (a `nowait` loop), before the region's barrier. Outside a region of the
// ticket's team at its full size (not pinned, nested, a smaller team) it does nothing.
//
//   const LoopTicket ticket;
//   #pragma omp parallel
//   {
//     const LoopShare share(ticket);
//   #pragma omp for schedule(dynamic, 1) nowait
//     for (...) ...
//   }
class LoopShare {
 public:
  explicit LoopShare(const LoopTicket& ticket);
  ~LoopShare();
  LoopShare(const LoopShare&) = delete;
  LoopShare& operator=(const LoopShare&) = delete;

 private:
  void wait_for(PinnedTeam::Lane& other) const;

  PinnedTeam* team_ = nullptr;  // null where this does nothing
  int lane_ = 0;
  uint32_t loop_ = 0;
};

}  // namespace onednn
