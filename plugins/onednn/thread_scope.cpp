#include "thread_scope.hpp"

#include <omp.h>

#include <cstdlib>

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

// An OpenMP worker outlives the call, so it is pinned once and stays: its next teams put it on the same CPU
// (libgomp hands a pool's threads the same numbers each time), and it runs nothing but OpenMP work.
void pin_worker(int cpu) {
  thread_local int pinned_to = -1;
  if (pinned_to != cpu && pin_calling_thread(cpu)) pinned_to = cpu;
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
  if (pin.empty() || team != static_cast<int>(pin.size())) return;
  if (sched_getaffinity(0, sizeof caller_mask_, &caller_mask_) != 0) return;
  for (int cpu : pin)  // a caller kept off some of these CPUs (by its own choice) is not moved onto them
    if (!CPU_ISSET(cpu, &caller_mask_)) return;
  pinned_ = pin_calling_thread(pin[0]);
  if (!pinned_) return;
#pragma omp parallel num_threads(team)
  {
    const int i = omp_get_thread_num();
    if (i > 0 && i < team) pin_worker(pin[static_cast<size_t>(i)]);
  }
}

ThreadScope::~ThreadScope() {
  if (pinned_) sched_setaffinity(0, sizeof caller_mask_, &caller_mask_);
  if (threads_ > 0) omp_set_num_threads(previous_);
}

}  // namespace onednn
