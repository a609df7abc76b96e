// What a training run prints: Keras-style progress redrawn in place on a terminal (one line per epoch elsewhere),
// the epoch summaries and the closing line. Silent when it has no stream (a rank other than 0, --quiet).
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>

namespace ramjet::core {

// Running loss and accuracy over the batches of an epoch.
struct Metrics {
  double loss_sum = 0;  // each batch's mean loss times the positions it counts
  int64_t correct = 0;
  int64_t counted = 0;  // positions the loss and accuracy average over: examples, or a sequence model's tokens
  int64_t samples = 0;
  bool has_accuracy = true;
  // right < 0: the batch has no accuracy; positions < 0: it counts its n examples.
  void add(double loss, int64_t right, int64_t n, int64_t positions = -1);
  double loss() const;
  double accuracy() const;
};

class ProgressReporter {
 public:
  ProgressReporter(std::ostream* out, bool terminal, int64_t epochs) : out_(out), terminal_(terminal), epochs_(epochs) {}
  // After each training step (throttled to 10 redraws a second).
  void step(int64_t epoch, int64_t step, int64_t steps, const Metrics& m, double samples_per_s, double elapsed);
  // An epoch's history entry (see Trainer): "Epoch 2/5: 469 steps, 3.1 s - loss: ... - lr: ...".
  void epoch(const nlohmann::json& entry, int64_t steps, double seconds);
  // The whole run's summary line, from the report's "train" and "eval" objects.
  void summary(const nlohmann::json& report);

 private:
  // The step-time breakdown, the input-bound verdict and its advice (train.verdict of the report).
  void verdict(const nlohmann::json& v);
  std::ostream* out_;
  bool terminal_;
  int64_t epochs_;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace ramjet::core
