#include "ramjet/train/lr_schedule.hpp"


#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

namespace ramjet::core {
namespace {

class Constant final : public LrSchedule {
 public:
  explicit Constant(double lr) : lr_(lr) {}
  double at(int64_t) const override { return lr_; }

 private:
  double lr_;
};

class StepDecay final : public LrSchedule {
 public:
  StepDecay(double lr, int64_t step_size, double gamma) : lr_(lr), step_size_(step_size), gamma_(gamma) {}
  double at(int64_t step) const override { return lr_ * std::pow(gamma_, static_cast<double>(step / step_size_)); }

 private:
  double lr_;
  int64_t step_size_;
  double gamma_;
};

class Piecewise final : public LrSchedule {
 public:
  Piecewise(std::vector<int64_t> boundaries, std::vector<double> values)
      : boundaries_(std::move(boundaries)), values_(std::move(values)) {}
  double at(int64_t step) const override {
    size_t i = 0;
    while (i < boundaries_.size() && step >= boundaries_[i]) ++i;
    return values_[i];
  }

 private:
  std::vector<int64_t> boundaries_;
  std::vector<double> values_;
};

class Cosine final : public LrSchedule {
 public:
  Cosine(double lr, int64_t warmup, int64_t decay, double alpha) : lr_(lr), warmup_(warmup), decay_(decay), alpha_(alpha) {}
  double at(int64_t step) const override {
    if (step < warmup_) return lr_ * static_cast<double>(step + 1) / static_cast<double>(warmup_);
    const double t = std::min(1.0, static_cast<double>(step - warmup_) / static_cast<double>(decay_));
    return lr_ * (alpha_ + (1.0 - alpha_) * 0.5 * (1.0 + std::cos(std::numbers::pi * t)));
  }

 private:
  double lr_;
  int64_t warmup_, decay_;
  double alpha_;
};

class OneCycle final : public LrSchedule {
 public:
  OneCycle(double max_lr, int64_t total, double pct_start, double div, double final_div)
      : max_(max_lr), initial_(max_lr / div), min_(max_lr / div / final_div),
        up_(std::max<int64_t>(1, static_cast<int64_t>(pct_start * static_cast<double>(total)) - 1)),
        down_(std::max<int64_t>(1, total - 1 - up_)) {}
  double at(int64_t step) const override {
    auto anneal = [](double from, double to, double t) { return to + (from - to) * 0.5 * (1.0 + std::cos(std::numbers::pi * t)); };
    if (step <= up_) return anneal(initial_, max_, static_cast<double>(step) / static_cast<double>(up_));
    return anneal(max_, min_, std::min(1.0, static_cast<double>(step - up_) / static_cast<double>(down_)));
  }

 private:
  double max_, initial_, min_;
  int64_t up_, down_;
};

}  // namespace

std::unique_ptr<LrSchedule> make_lr_schedule(const ScheduleConfig& s, double lr, int64_t total_steps) {
  if (s.type == "step") {
    if (!s.boundaries.empty() || !s.values.empty()) return std::make_unique<Piecewise>(s.boundaries, s.values);
    return std::make_unique<StepDecay>(lr, s.step_size, s.gamma);
  }
  if (s.type == "cosine") {
    const int64_t decay = s.decay_steps.value_or(std::max<int64_t>(1, total_steps - s.warmup_steps));
    return std::make_unique<Cosine>(lr, s.warmup_steps, std::max<int64_t>(1, decay), s.alpha);
  }
  if (s.type == "one_cycle") {
    // Without a known run length (a sequential source) the run's total is unknown: at least two steps.
    const int64_t total = std::max<int64_t>(2, s.total_steps.value_or(total_steps));
    return std::make_unique<OneCycle>(s.max_lr.value_or(lr), total, s.pct_start, s.div_factor, s.final_div_factor);
  }
  return std::make_unique<Constant>(lr);
}

}  // namespace ramjet::core
