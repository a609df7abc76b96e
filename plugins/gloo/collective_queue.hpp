// One thread that runs a rank's collectives in the order they were issued. Blocking calls wait for their own
// job; all_reduce_start returns a handle at once and all_reduce_wait waits for it — so a non-blocking all-reduce
// really proceeds while the caller runs backward. Gloo's own timeout ends a job whose peer is gone; the wait here
// has a limit too, in case gloo itself never returns.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace ramjet_gloo {

class CollectiveQueue {
 public:
  CollectiveQueue();
  // Joins the thread when every job has returned; when one never did (gloo stuck), the thread is left behind
  // (stuck() says so) rather than hanging the process on its way out.
  ~CollectiveQueue();
  CollectiveQueue(const CollectiveQueue&) = delete;
  CollectiveQueue& operator=(const CollectiveQueue&) = delete;

  uint64_t submit(std::function<void()> job);
  // Waits up to `limit` for the job; rethrows what it threw. Returns false when the limit passed first.
  bool wait(uint64_t handle, std::chrono::milliseconds limit);
  bool knows(uint64_t handle) const;
  bool stuck() const;

 private:
  struct Job {
    std::function<void()> work;
    bool done = false;
    std::exception_ptr failure;
  };
  // Shared with the thread, so a thread left behind never touches freed memory.
  struct State {
    std::mutex mutex;
    std::condition_variable changed;
    std::deque<std::shared_ptr<Job>> pending;
    std::map<uint64_t, std::shared_ptr<Job>> jobs;
    uint64_t next_handle = 1;
    bool stopping = false;
    bool stuck = false;
  };
  static void run(const std::shared_ptr<State>& state);

  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace ramjet_gloo
