#include "ramjet/data/autotune.hpp"

#include "ramjet/plugin/log.hpp"

#include <algorithm>
#include <cstdio>

namespace ramjet::core {
namespace {

constexpr double kWaitToRaise = 0.02;     // the consumer waited more than 2% of the time: input-bound
constexpr double kIdleToLower = 0.35;     // workers busy less than 35% of their time
constexpr double kWaitToLower = 0.001;    // ... and the consumer practically never waited

std::string percent(double f) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", 100.0 * f);
  return text;
}

}  // namespace

Autotuner::Autotuner(AutotuneLimits limits, int parallelism, int prefetch)
    : limits_(limits), parallelism_(parallelism), prefetch_(prefetch) {}

void Autotuner::decide(const std::string& knob, int value, const std::string& why) {
  decisions_.push_back({{"after_batches", batches_seen_}, {"knob", knob}, {"value", value}, {"why", why}});
  log(RAMJET_LOG_DEBUG, "autotune", knob + " -> " + std::to_string(value) + ": " + why);
}

bool Autotuner::observe(const AutotuneWindow& w) {
  batches_seen_ += w.batches;
  if (w.wall_s <= 0) return false;
  const double wait = w.wait_s / w.wall_s;
  const double utilization = w.worker_busy_s / (w.wall_s * parallelism_);
  if (wait > kWaitToRaise) {
    if (limits_.tune_parallelism && parallelism_ < limits_.max_parallelism) {
      decide("parallelism", ++parallelism_, "consumer waited " + percent(wait) + " of the time");
      return true;
    }
    // Deeper prefetch only helps when production keeps up on average and the waits come from jitter; when the
    // workers are the bottleneck it would only hold more memory.
    const double producer_s = w.worker_busy_s / parallelism_;
    const double consumer_s = w.wall_s - w.wait_s;
    if (limits_.tune_prefetch && prefetch_ < limits_.max_prefetch && producer_s < consumer_s) {
      decide("prefetch", ++prefetch_,
             "consumer waited " + percent(wait) + " although workers keep up on average (jitter)");
      return true;
    }
    return false;
  }
  if (limits_.tune_parallelism && parallelism_ > limits_.min_parallelism && wait < kWaitToLower &&
      utilization < kIdleToLower) {
    decide("parallelism", --parallelism_, "workers busy " + percent(utilization) + ", consumer never waited");
    return true;
  }
  return false;
}

void Autotuner::limit_prefetch(int batches) {
  limits_.max_prefetch = std::max(1, std::min(limits_.max_prefetch, batches));
  if (limits_.tune_prefetch && prefetch_ > limits_.max_prefetch) {
    prefetch_ = limits_.max_prefetch;
    decide("prefetch", prefetch_, "memory budget");
  }
}

nlohmann::json Autotuner::report() const {
  return {{"parallelism", parallelism_},
          {"prefetch", prefetch_},
          {"tuned", {{"parallelism", limits_.tune_parallelism}, {"prefetch", limits_.tune_prefetch}}},
          {"limits", {{"parallelism", limits_.max_parallelism}, {"prefetch", limits_.max_prefetch}}},
          {"decisions", decisions_}};
}

}  // namespace ramjet::core
