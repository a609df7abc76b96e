#include "collective_queue.hpp"

namespace ramjet_gloo {

CollectiveQueue::CollectiveQueue() : state_(std::make_shared<State>()) {
  thread_ = std::thread([state = state_] { run(state); });
}

CollectiveQueue::~CollectiveQueue() {
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

bool CollectiveQueue::stuck() const {
  std::lock_guard lock(state_->mutex);
  return state_->stuck;
}

uint64_t CollectiveQueue::submit(std::function<void()> work) {
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

bool CollectiveQueue::knows(uint64_t handle) const {
  std::lock_guard lock(state_->mutex);
  return state_->jobs.count(handle) != 0;
}

bool CollectiveQueue::wait(uint64_t handle, std::chrono::milliseconds limit) {
  std::unique_lock lock(state_->mutex);
  auto it = state_->jobs.find(handle);
  if (it == state_->jobs.end()) return true;
  std::shared_ptr<Job> job = it->second;
  if (!state_->changed.wait_for(lock, limit, [&] { return job->done; })) {
    state_->stuck = true;
    return false;
  }
  state_->jobs.erase(handle);
  if (job->failure) std::rethrow_exception(job->failure);
  return true;
}

void CollectiveQueue::run(const std::shared_ptr<State>& state) {
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

}  // namespace ramjet_gloo
