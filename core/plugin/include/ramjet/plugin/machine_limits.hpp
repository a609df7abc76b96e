// Limits tied to the machine, for settings a user writes as a count of threads or buffers: large enough never to
// stand in the way of a real run, small enough that a typo (100000) is an error instead of a process table or
// memory exhausted. README's "Limits" section documents them.
#pragma once

#include <cstdint>
#include <string>

namespace ramjet::core {

// The CPUs this process may run on (at least 1): the one reading of it, for limits, autotuning and advice. A rank
// started by `ramjet run --nproc N` gets its share of the machine through RAMJET_CPUS.
int cpu_count();

// The most threads any one setting may ask for (train.threads, parallelism, eval --threads): 4 per CPU this
// machine has, and never fewer than 64.
int64_t max_threads();

// The most batches an input pipeline may prefetch.
inline constexpr int64_t kMaxPrefetch = 1024;

// The largest batch a pipeline may ask for (2^20 examples): far above any real batch, far below where
// batch x element size arithmetic could overflow.
inline constexpr int64_t kMaxBatch = int64_t{1} << 20;

// This machine's physical memory in bytes, 0 when unknown: models and batches that cannot fit are refused up front.
int64_t physical_memory_bytes();

// "must be at most N (4 per CPU of this machine's C CPUs)" for messages.
std::string max_threads_explained();

}  // namespace ramjet::core
