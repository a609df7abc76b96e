// A program's OpenMP threads for the length of one call: how many, and on which CPUs.
//
// How many: oneDNN's OpenMP runtime reads the count per call, and primitives are created under it as their
// blocking depends on it. 0 leaves OpenMP's default.
//
// Where: oneDNN splits each primitive evenly over its threads and waits for the slowest. On a machine another
// process keeps busy, the kernel moves our threads about, at times two of them onto one core, and every primitive
// waits: the bench's ResNet on 2 vCPUs beside one busy process trained at 0.22 of its quiet speed, and at 0.5 with
// each thread kept on a CPU of its own (docs/benchmarks.md, issue 14). So when a call's threads are as many as the
// CPUs the process may use, thread i runs on the i-th of them. The calling thread is pinned only for the call and
// gets its own mask back after, so threads the host starts from it later (the input pipeline's) are free to move.
// Fewer threads than CPUs are left to the kernel: two jobs that both pinned to the first CPUs would share those
// while the rest idle. A call that does not pin also gives workers an earlier call pinned their CPUs back.
#pragma once

#include <sched.h>

#include <vector>

namespace onednn {

// The CPUs a backend's programs pin to: those the thread that made the backend may run on, in order. Empty (no
// pinning) where `enabled` is false (the backend's `pin_threads`) or the user binds OpenMP's threads themselves
// (OMP_PROC_BIND, OMP_PLACES, GOMP_CPU_AFFINITY or KMP_AFFINITY set).
std::vector<int> cpus_to_pin(bool enabled);

struct PinnedTeam;

class ThreadScope {
 public:
  // `pin`: from cpus_to_pin; used when the call's thread count equals its size.
  explicit ThreadScope(int threads, const std::vector<int>& pin = {});
  ~ThreadScope();
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  // Pins the caller and the team's workers, one CPU each, where the call's team fills `pin`; false where it
  // does not pin.
  bool pin_team(int team, const std::vector<int>& pin);

  int threads_, previous_ = 0;
  PinnedTeam* outer_team_ = nullptr;  // the team the caller was pinned for before the call, given back after
  bool pinned_ = false;
  cpu_set_t caller_mask_{};  // the calling thread's mask before the call, given back by the destructor
};

}  // namespace onednn
