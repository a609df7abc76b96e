#include "ramjet/core/lr_schedule.hpp"

#include "ramjet/core/failure.hpp"

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

std::unique_ptr<LrSchedule> make_lr_schedule(const nlohmann::json& spec, double lr, int64_t total_steps,
                                             const std::string& where, const std::string& pointer) {
  auto fail = [&](const std::string& field, const std::string& message) {
    const std::string p = field.empty() ? pointer : pointer + "/" + field;
    return ManifestError(where + "#" + p, p, message);
  };
  if (spec.is_null()) return std::make_unique<Constant>(lr);
  if (!spec.is_object() || !spec.contains("type") || !spec["type"].is_string())
    throw fail("", "must be an object with a \"type\" (constant, step, cosine, one_cycle)");
  const std::string type = spec["type"];
  auto number = [&](const char* key, double fallback, double lo, double hi) {
    if (!spec.contains(key)) return fallback;
    if (!spec[key].is_number() || spec[key].get<double>() < lo || spec[key].get<double>() > hi)
      throw fail(key, "must be a number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return spec[key].get<double>();
  };
  auto count = [&](const char* key, int64_t fallback) {
    if (!spec.contains(key)) return fallback;
    if (!spec[key].is_number_integer() || spec[key].get<int64_t>() < 0) throw fail(key, "must be a non-negative integer");
    return spec[key].get<int64_t>();
  };
  if (type == "constant") return std::make_unique<Constant>(lr);
  if (type == "step") {
    if (spec.contains("boundaries")) {
      if (!spec["boundaries"].is_array() || !spec.contains("values") || !spec["values"].is_array() ||
          spec["values"].size() != spec["boundaries"].size() + 1)
        throw fail("values", "needs one more value than boundaries");
      return std::make_unique<Piecewise>(spec["boundaries"].get<std::vector<int64_t>>(),
                                         spec["values"].get<std::vector<double>>());
    }
    const int64_t step_size = count("step_size", 0);
    if (step_size < 1) throw fail("step_size", "required: decay every step_size steps (or give boundaries and values)");
    return std::make_unique<StepDecay>(lr, step_size, number("gamma", 0.1, 0.0, 1.0));
  }
  if (type == "cosine") {
    const int64_t warmup = count("warmup_steps", 0);
    const int64_t decay = count("decay_steps", std::max<int64_t>(1, total_steps - warmup));
    return std::make_unique<Cosine>(lr, warmup, std::max<int64_t>(1, decay), number("alpha", 0.0, 0.0, 1.0));
  }
  if (type == "one_cycle") {
    const int64_t total = count("total_steps", total_steps);
    if (total < 2) throw fail("total_steps", "one_cycle needs at least 2 steps");
    return std::make_unique<OneCycle>(number("max_lr", lr, 0.0, 1e3), total, number("pct_start", 0.3, 0.0, 1.0),
                                      number("div_factor", 25.0, 1.0, 1e9), number("final_div_factor", 1e4, 1.0, 1e12));
  }
  throw fail("type", "unknown schedule '" + type + "' (constant, step, cosine, one_cycle)");
}

}  // namespace ramjet::core
