#include "thread_scope.hpp"

#include "loop_share.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <utility>

namespace onednn {
namespace {

bool user_binds_threads() {
  for (const char* name : {"OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY", "KMP_AFFINITY"})
    if (std::getenv(name) != nullptr) return true;
  return false;
}

bool pin_calling_thread(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  return sched_setaffinity(0, sizeof one, &one) == 0;
}

// An OpenMP worker outlives the call, so it is pinned once and stays on its CPU while calls keep pinning (libgomp
// hands a pool's threads the same numbers each time). A smaller team of two or more in between (a oneDNN primitive
// may run one) makes the workers beyond it exit; their replacements start on the pinned caller's CPU, and are
// pinned at the next call, or by LoopShare at their first loop.
// libgomp keeps a pool of workers for each thread that starts teams; these count per such thread.
thread_local int worker_cpu = -1;       // the CPU this worker was pinned to, or -1
thread_local int pinned_team_size = 0;  // the largest team of this thread's pool pinned now; 0 when none is
thread_local int pinned_scopes = 0;     // this thread's scopes that pinned it, still open

// `moved`: LoopShare moved this worker onto another lane's CPU (null where the team has no PinnedTeam).
void pin_worker(int cpu, std::atomic<bool>* moved) {
  const bool was_moved = moved != nullptr && moved->exchange(false);
  if ((worker_cpu != cpu || was_moved) && pin_calling_thread(cpu)) worker_cpu = cpu;
}

// A call that does not pin leaves its threads to the kernel, those an earlier call pinned included: every worker of
// that team gets the calling thread's CPUs back (also one the pool may have started meanwhile, which was born with
// the pinned caller's one CPU).
void release_workers() {
  const int team = std::exchange(pinned_team_size, 0);
  cpu_set_t mask;
  if (team == 0 || sched_getaffinity(0, sizeof mask, &mask) != 0) return;
#pragma omp parallel num_threads(team)
  if (omp_get_thread_num() > 0 && sched_setaffinity(0, sizeof mask, &mask) == 0) worker_cpu = -1;
}

}  // namespace

std::vector<int> cpus_to_pin(bool enabled) {
  std::vector<int> cpus;
  cpu_set_t mask;
  if (!enabled || user_binds_threads() || sched_getaffinity(0, sizeof mask, &mask) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &mask)) cpus.push_back(cpu);
  return cpus;
}

ThreadScope::ThreadScope(int threads, const std::vector<int>& pin) : threads_(threads) {
  if (threads_ > 0) {
    previous_ = omp_get_max_threads();
    omp_set_num_threads(threads_);
  }
  const int team = threads_ > 0 ? threads_ : omp_get_max_threads();
  pinned_ = pin_team(team, pin);
  if (pinned_) ++pinned_scopes;
  else if (pinned_scopes == 0) release_workers();  // a scope inside a pinned one leaves the outer's pins be
}

bool ThreadScope::pin_team(int team, const std::vector<int>& pin) {
  if (pin.empty() || team != static_cast<int>(pin.size())) return false;
  if (sched_getaffinity(0, sizeof caller_mask_, &caller_mask_) != 0) return false;
  for (int cpu : pin)  // a caller kept off some of these CPUs (by its own choice) is not moved onto them
    if (!CPU_ISSET(cpu, &caller_mask_)) return false;
  if (!pin_calling_thread(pin[0])) return false;
  pinned_team_size = std::max(pinned_team_size, team);
  // The team's CPUs for LoopShare, which a team too large to describe does without.
  PinnedTeam& t = own_team();
  const bool shared = team <= PinnedTeam::kMaxLanes;
  t.size = shared ? team : 0;
  for (int i = 0; i < t.size; ++i) t.cpu[i] = pin[static_cast<size_t>(i)];
  if (shared) t.lanes[0].moved = false;  // pinned just now
  outer_team_ = std::exchange(pinned_team(), shared ? &t : nullptr);
#pragma omp parallel num_threads(team)
  {
    const int i = omp_get_thread_num();
    if (i > 0 && i < team) pin_worker(pin[static_cast<size_t>(i)], shared ? &t.lanes[i].moved : nullptr);
  }
  return true;
}

ThreadScope::~ThreadScope() {
  if (pinned_) {
    sched_setaffinity(0, sizeof caller_mask_, &caller_mask_);
    pinned_team() = outer_team_;
    --pinned_scopes;
  }
  if (threads_ > 0) omp_set_num_threads(previous_);
}

}  // namespace onednn
