#include "watchdog.hpp"

#include <algorithm>

namespace ramjet_mpi {

Watchdog::Watchdog(std::chrono::milliseconds limit, std::function<void(const std::string&)> expire)
    : limit_(limit), expire_(std::move(expire)), thread_([this] { watch(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void Watchdog::begin(const std::string& what) {
  std::lock_guard lock(mutex_);
  in_flight_ = true;
  since_ = Clock::now();
  what_ = what;
}

void Watchdog::end() {
  std::lock_guard lock(mutex_);
  in_flight_ = false;
}

void Watchdog::watch() {
  // A tenth of the limit, at most 100 ms: a late abort is at most that much late.
  const auto tick = std::min<std::chrono::milliseconds>(std::chrono::milliseconds(100), limit_ / 10 + std::chrono::milliseconds(1));
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    changed_.wait_for(lock, tick);
    if (stopping_ || !in_flight_ || Clock::now() - since_ < limit_) continue;
    const std::string what = what_;
    lock.unlock();
    expire_(what);  // does not return
    lock.lock();
  }
}

}  // namespace ramjet_mpi
