// Training on a machine whose cores another process also wants. oneDNN's OpenMP kernels split each primitive
// evenly over their threads, so one thread sharing its core with a busy process holds every step back: measured
// on 2 cores with one competing single-thread process, 2 threads kept 52% of the quiet speed and 1 thread 70%.
// With "adapt_threads", the program times its training steps and runs them with the configured threads or with
// one, whichever is faster now: it tries the other count when a step slows down markedly and, less and less
// often while its choice keeps winning, on a schedule. Off by default: float32 sums differ in their last bits
// between thread counts, so a run whose choice depends on the load is not bitwise repeatable.
#pragma once

#include <cstddef>
#include <vector>

namespace onednn {

class ThreadTuner {
 public:
  // `configured` > 1 and `enabled`: the tuner may choose 1; otherwise threads() is always `configured`.
  ThreadTuner(int configured, bool enabled);

  int threads() const { return candidates_[current_]; }
  // A training step (forward and backward) ran with threads() and took `seconds`.
  void step_done(double seconds);

 private:
  static constexpr int kWindow = 8;          // steps timed per decision (after one settling step)
  static constexpr int kFirstInterval = 32;  // steps before trying the other count again, doubling to kMaxInterval
  static constexpr int kMaxInterval = 2048;
  static constexpr double kSlowdown = 1.3;  // a window this much slower than the best one tries the other count

  void decide(double median);

  std::vector<int> candidates_;
  std::size_t current_ = 0;
  bool probing_ = false;  // the current window times the other count
  std::size_t home_ = 0;      // the count a probe returns to when it loses
  double home_median_ = 0, best_median_ = 0;
  int settle_ = 1, since_probe_ = 0, interval_ = kFirstInterval;
  std::vector<double> window_;
};

}  // namespace onednn
