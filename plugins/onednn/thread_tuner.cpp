#include "thread_tuner.hpp"

#include <algorithm>

namespace onednn {

ThreadTuner::ThreadTuner(int configured, bool enabled) : candidates_{configured} {
  if (enabled && configured > 1) candidates_.push_back(1);
}

void ThreadTuner::step_done(double seconds) {
  if (candidates_.size() < 2) return;
  if (settle_ > 0) {  // the first step after a change builds plans and warms caches
    --settle_;
    return;
  }
  window_.push_back(seconds);
  if (static_cast<int>(window_.size()) < kWindow) return;
  std::nth_element(window_.begin(), window_.begin() + kWindow / 2, window_.end());
  const double median = window_[kWindow / 2];
  window_.clear();
  decide(median);
}

void ThreadTuner::decide(double median) {
  auto switch_to = [&](std::size_t index) {
    current_ = index;
    settle_ = 1;
  };
  if (probing_) {
    probing_ = false;
    since_probe_ = 0;
    if (median < home_median_) {  // the other count wins: it becomes home, and the schedule starts over
      home_ = current_;
      home_median_ = best_median_ = median;
      interval_ = kFirstInterval;
    } else {
      switch_to(home_);
      interval_ = std::min(interval_ * 2, kMaxInterval);
    }
    return;
  }
  since_probe_ += kWindow;
  home_ = current_;
  home_median_ = median;
  if (best_median_ == 0 || median < best_median_) best_median_ = median;
  if (median > kSlowdown * best_median_ || since_probe_ >= interval_) {
    probing_ = true;
    best_median_ = median;  // the machine changed, or may have: judge later windows against now
    switch_to(1 - current_);
  }
}

}  // namespace onednn
