// Chooses map parallelism and prefetch depth from measurements while the pipeline runs, in the spirit of
// tf.data's AUTOTUNE: when the consumer waits for input, raise the knob that most cuts that wait (threads first,
// up to the CPU budget; then prefetch depth, up to the memory budget); when workers sit idle and the consumer
// never waits, give a thread back to the compute that shares the cores. Every decision is logged and reported.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace ramjet::core {

struct AutotuneLimits {
  bool tune_parallelism = false;
  bool tune_prefetch = false;
  int min_parallelism = 1;
  int max_parallelism = 1;  // the CPU budget
  int max_prefetch = 1;     // the memory budget divided by a batch's bytes
};

struct AutotuneWindow {
  double wall_s = 0;         // consumer wall time over the window
  double wait_s = 0;         // of which the consumer waited for batches
  double worker_busy_s = 0;  // summed over active workers
  int64_t batches = 0;
};

class Autotuner {
 public:
  explicit Autotuner(AutotuneLimits limits, int parallelism, int prefetch);
  // Called every few batches with what happened since the last call. Returns true when a knob changed.
  bool observe(const AutotuneWindow& window);
  // Once a batch's size is known: prefetch may hold at most `batches` of them (the memory budget).
  void limit_prefetch(int batches);
  int parallelism() const { return parallelism_; }
  int prefetch() const { return prefetch_; }
  nlohmann::json report() const;

 private:
  void decide(const std::string& knob, int value, const std::string& why);

  AutotuneLimits limits_;
  int parallelism_;
  int prefetch_;
  nlohmann::json decisions_ = nlohmann::json::array();
  int64_t batches_seen_ = 0;
};

}  // namespace ramjet::core
