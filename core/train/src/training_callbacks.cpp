#include "ramjet/train/training_callbacks.hpp"

#include "ramjet/train/metrics.hpp"

#include <algorithm>

namespace ramjet::core {

Monitor Monitor::of(const std::string& metric, double min_delta) {
  Monitor m;
  m.metric = metric;
  m.maximize = metric_is_maximized(metric);
  m.min_delta = min_delta;
  return m;
}

double ReduceLrOnPlateau::update(double value, double lr) {
  if (cooldown_left_ > 0) --cooldown_left_;
  if (!have_best_ || monitor_.improves(value, best_)) {
    have_best_ = true;
    best_ = value;
    wait_ = 0;
    return lr;
  }
  if (cooldown_left_ > 0) return lr;
  if (++wait_ >= patience_) {
    wait_ = 0;
    cooldown_left_ = cooldown_;
    return std::max(lr * factor_, min_lr_);
  }
  return lr;
}

void EarlyStopping::update(int64_t epoch, double value) {
  improved_ = !have_best_ || monitor_.improves(value, best_);
  if (improved_) {
    have_best_ = true;
    best_ = value;
    best_epoch_ = epoch;
    wait_ = 0;
  } else {
    ++wait_;
  }
}

}  // namespace ramjet::core
