// Runs the per-element work on a pool of threads and hands results to one consumer in sequence order (or, when
// not deterministic, in completion order within an epoch). Threads take consecutive items in chunks, so the
// locking cost is paid per chunk, not per element; a bounded window of in-flight chunks keeps memory flat; the
// number of active threads can change while it runs (autotuning).
#pragma once

#include "ramjet/data/work_result.hpp"

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ramjet::core {

class ParallelMap {
 public:
  using Fetch = std::function<WorkItem()>;             // called with the pool's lock held: keep it short
  using Process = std::function<WorkResult(WorkItem)>;  // called concurrently

  // `chunk`: items a thread takes at once; `window`: chunks in flight or finished but not yet consumed (at most
  // `max_window`). Finished chunks waiting for the consumer are the prefetch buffer.
  // With `consumer_helps`, a consumer that would wait does the next chunk itself: `max_threads` background
  // threads plus the consumer then produce, and the consumer rarely sleeps.
  ParallelMap(Fetch fetch, Process process, int max_threads, int active_threads, size_t chunk, size_t window,
              size_t max_window, bool deterministic, bool consumer_helps);
  ~ParallelMap();
  ParallelMap(const ParallelMap&) = delete;
  ParallelMap& operator=(const ParallelMap&) = delete;

  // The next result; blocks. One consumer thread only.
  WorkResult next();

  void set_active(int threads);
  void set_window(size_t chunks);
  int max_threads() const { return static_cast<int>(threads_.size()); }
  // Nanoseconds spent inside Process, summed over threads.
  uint64_t busy_ns() const { return busy_ns_.load(std::memory_order_relaxed); }

 private:
  struct Slot {
    enum State : uint8_t { kEmpty, kReady, kTaken };
    State state = kEmpty;
    bool ends_with_marker = false;  // known when the chunk is fetched
    std::vector<WorkResult> results;
  };
  void work(int index);
  bool can_fetch() const;
  // Fetches, processes and publishes one chunk; called with the lock held, returns with it held.
  void run_chunk(std::unique_lock<std::mutex>& lock);
  bool take_any_ready(std::vector<WorkResult>& out);

  Fetch fetch_;
  Process process_;
  const size_t chunk_;
  const size_t capacity_;  // slots allocated
  size_t window_;          // slots in use (autotuned)
  const bool deterministic_;
  const bool consumer_helps_;
  std::vector<Slot> slots_;
  std::mutex mutex_;
  std::condition_variable workers_cv_, consumer_cv_;
  uint64_t next_sequence_ = 0;  // next item to fetch
  uint64_t base_ = 0;           // lowest sequence not yet taken by the consumer
  bool ended_ = false;          // the stream end has been fetched
  bool stop_ = false;
  int active_;
  std::atomic<uint64_t> busy_ns_{0};
  std::vector<WorkResult> taken_;  // the consumer's current chunk, handed out front to back
  size_t taken_next_ = 0;
  std::vector<std::thread> threads_;
};

}  // namespace ramjet::core
