#include "ramjet/data/parallel_map.hpp"

#include "ramjet/plugin/trace.hpp"

#include <algorithm>
#include <chrono>

namespace ramjet::core {

ParallelMap::ParallelMap(Fetch fetch, Process process, int max_threads, int active_threads, size_t chunk,
                         size_t window, size_t max_window, bool deterministic, bool consumer_helps)
    : fetch_(std::move(fetch)), process_(std::move(process)), chunk_(std::max<size_t>(chunk, 1)),
      capacity_(std::max<size_t>({max_window, window, 1})), window_(std::clamp<size_t>(window, 1, capacity_)),
      deterministic_(deterministic), consumer_helps_(consumer_helps), slots_(capacity_),
      active_(std::clamp(active_threads, 0, std::max(0, max_threads))) {
  threads_.reserve(static_cast<size_t>(std::max(0, max_threads)));
  for (int i = 0; i < max_threads; ++i) threads_.emplace_back([this, i] { work(i); });
}

ParallelMap::~ParallelMap() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  workers_cv_.notify_all();
  consumer_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void ParallelMap::set_active(int threads) {
  {
    std::lock_guard lock(mutex_);
    active_ = std::clamp(threads, consumer_helps_ ? 0 : 1, max_threads());
  }
  workers_cv_.notify_all();
}

void ParallelMap::set_window(size_t chunks) {
  {
    std::lock_guard lock(mutex_);
    window_ = std::clamp<size_t>(chunks, 1, capacity_);
  }
  workers_cv_.notify_all();
}

bool ParallelMap::can_fetch() const { return !stop_ && !ended_ && next_sequence_ < base_ + window_; }

void ParallelMap::run_chunk(std::unique_lock<std::mutex>& lock) {
  // Fetch consecutive items under the lock (an epoch or stream marker closes the chunk) ...
  const uint64_t sequence = next_sequence_++;
  std::vector<WorkItem> items;
  items.reserve(chunk_);
  bool marker = false;
  std::exception_ptr read_error;
  const bool tracing = Trace::on();
  const auto fetch_start = tracing ? Trace::Clock::now() : Trace::Clock::time_point{};
  try {
    while (items.size() < chunk_ && !marker) {
      items.push_back(fetch_());
      marker = items.back().kind != WorkItem::Kind::kElement;
      if (items.back().kind == WorkItem::Kind::kStreamEnd) ended_ = true;
    }
  } catch (...) {
    // A failing read is reported at its place like any element error; nothing after it is fetched.
    read_error = std::current_exception();
    ended_ = true;
    marker = true;
  }
  slots_[sequence % capacity_].ends_with_marker = marker;
  // A sequential source is read here, item by item; a random-access source is read in process_ (the chunk span).
  if (tracing && std::any_of(items.begin(), items.end(), [](const WorkItem& i) { return i.raw.has_value(); }))
    Trace::complete("source read", fetch_start, Trace::Clock::now(), "elements", static_cast<int64_t>(items.size()));
  lock.unlock();
  // ... process them without it ...
  std::vector<WorkResult> results;
  results.reserve(items.size() + (read_error ? 1 : 0));
  const auto start = std::chrono::steady_clock::now();
  {
    TraceSpan span("map chunk", "elements", static_cast<int64_t>(items.size()));
    for (auto& item : items) {
      if (item.kind == WorkItem::Kind::kElement) results.push_back(process_(std::move(item)));
      else results.push_back(WorkResult::marker(item));
    }
  }
  if (read_error) {
    WorkResult r;
    r.error = read_error;
    results.push_back(std::move(r));
  }
  busy_ns_.fetch_add(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                std::chrono::steady_clock::now() - start)
                                                .count()),
                     std::memory_order_relaxed);
  // ... and publish them.
  lock.lock();
  Slot& slot = slots_[sequence % capacity_];
  slot.results = std::move(results);
  slot.state = Slot::kReady;
}

void ParallelMap::work(int index) {
  Trace::name_thread("pipeline worker", index);
  std::unique_lock lock(mutex_);
  for (;;) {
    workers_cv_.wait(lock, [&] { return stop_ || (index < active_ && can_fetch()); });
    if (stop_) return;
    run_chunk(lock);
    consumer_cv_.notify_one();
  }
}

// Non-deterministic order: any finished chunk that holds no marker, or the oldest chunk.
bool ParallelMap::take_any_ready(std::vector<WorkResult>& out) {
  for (uint64_t s = base_; s < next_sequence_; ++s) {
    Slot& slot = slots_[s % capacity_];
    if (slot.state == Slot::kTaken) continue;
    const bool oldest = s == base_;
    if (slot.ends_with_marker && !oldest) return false;  // a marker waits for everything before it
    if (slot.state != Slot::kReady) {
      if (slot.ends_with_marker) return false;
      continue;
    }
    out = std::move(slot.results);
    slot.state = Slot::kTaken;
    return true;
  }
  return false;
}

WorkResult ParallelMap::next() {
  if (taken_next_ < taken_.size()) return std::move(taken_[taken_next_++]);
  {
    std::unique_lock lock(mutex_);
    for (;;) {
      if (deterministic_) {
        Slot& slot = slots_[base_ % capacity_];
        if (slot.state == Slot::kReady) {
          taken_ = std::move(slot.results);
          slot.state = Slot::kEmpty;
          ++base_;
          break;
        }
      } else if (take_any_ready(taken_)) {
        while (base_ < next_sequence_ && slots_[base_ % capacity_].state == Slot::kTaken) {
          slots_[base_ % capacity_].state = Slot::kEmpty;
          ++base_;
        }
        break;
      }
      // Nothing to hand out yet: rather than sleep, the consumer does the next chunk itself when it may.
      if (consumer_helps_ && can_fetch()) {
        run_chunk(lock);
        continue;
      }
      consumer_cv_.wait(lock);
    }
  }
  workers_cv_.notify_all();
  taken_next_ = 0;
  return std::move(taken_[taken_next_++]);
}

}  // namespace ramjet::core
