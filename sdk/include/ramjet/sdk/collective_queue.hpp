// One thread that runs a strategy's collectives in the order they were issued, for every strategy plugin alike.
// Blocking calls wait for their own job; a non-blocking all-reduce returns a handle at once and waits later — so
// the collective really proceeds while the caller runs backward. A wait has a limit: when a job never returns
// (a transport stuck on a stalled peer), the caller gets `false` and the thread is left behind rather than hang
// the process on its way out. Transports whose library must be entered from one thread only (MPI initialized for
// MPI_THREAD_FUNNELED) get that for free: every job runs on this thread.
#ifndef RAMJET_SDK_COLLECTIVE_QUEUE_HPP
#define RAMJET_SDK_COLLECTIVE_QUEUE_HPP

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <algorithm>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

namespace ramjet {

class CollectiveQueue {
 public:
  CollectiveQueue() : state_(std::make_shared<State>()) {
    thread_ = std::thread([state = state_] { run(state); });
  }
  // Runs what is still queued, then joins the thread — unless a job never returned (stuck()), in which case the
  // thread is detached and keeps only the shared state alive.
  ~CollectiveQueue() {
    bool stuck;
    {
      std::lock_guard lock(state_->mutex);
      state_->stopping = true;
      stuck = state_->stuck;
    }
    state_->changed.notify_all();
    if (stuck) thread_.detach();
    else thread_.join();
  }
  CollectiveQueue(const CollectiveQueue&) = delete;
  CollectiveQueue& operator=(const CollectiveQueue&) = delete;

  uint64_t submit(std::function<void()> work) {
    auto job = std::make_shared<Job>();
    job->work = std::move(work);
    uint64_t handle;
    {
      std::lock_guard lock(state_->mutex);
      handle = state_->next_handle++;
      state_->jobs[handle] = job;
      state_->pending.push_back(job);
    }
    state_->changed.notify_all();
    return handle;
  }

  // Waits up to `limit` for the job and rethrows what it threw. Returns false when the limit passed first (the
  // queue is stuck from then on); true at once for a handle already waited for. `check`, when given, runs every
  // `every` while the job is still running, outside the queue's lock: a transport's own test of its peers, for
  // failures the library does not report to a waiting call. What it throws ends the wait (the queue is stuck from
  // then on: the job may never return) and reaches the caller.
  bool wait(uint64_t handle, std::chrono::milliseconds limit, const std::function<void()>& check = {},
            std::chrono::milliseconds every = std::chrono::milliseconds(100)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    std::unique_lock lock(state_->mutex);
    auto it = state_->jobs.find(handle);
    if (it == state_->jobs.end()) return true;
    std::shared_ptr<Job> job = it->second;
    for (;;) {
      const auto until = check ? std::min(deadline, std::chrono::steady_clock::now() + every) : deadline;
      if (state_->changed.wait_until(lock, until, [&] { return job->done; })) break;
      if (std::chrono::steady_clock::now() >= deadline) {
        state_->stuck = true;
        return false;
      }
      lock.unlock();
      try {
        check();
      } catch (...) {
        lock.lock();
        if (job->done) break;  // it ended meanwhile: its own outcome is the answer
        state_->stuck = true;
        throw;
      }
      lock.lock();
    }
    state_->jobs.erase(handle);
    if (job->failure) std::rethrow_exception(job->failure);
    return true;
  }

  bool knows(uint64_t handle) const {
    std::lock_guard lock(state_->mutex);
    return state_->jobs.count(handle) != 0;
  }

  bool stuck() const {
    std::lock_guard lock(state_->mutex);
    return state_->stuck;
  }

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

  static void run(const std::shared_ptr<State>& state) {
    for (;;) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock lock(state->mutex);
        state->changed.wait(lock, [&] { return state->stopping || !state->pending.empty(); });
        if (state->pending.empty()) return;
        job = state->pending.front();
        state->pending.pop_front();
      }
      std::exception_ptr failure;
      try {
        job->work();
      } catch (...) {
        failure = std::current_exception();
      }
      {
        std::lock_guard lock(state->mutex);
        job->done = true;
        job->failure = failure;
      }
      state->changed.notify_all();
    }
  }

  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace ramjet

#endif  // RAMJET_SDK_COLLECTIVE_QUEUE_HPP
