// Where a training run's time went, and whether it waited for its input: the step-time breakdown and the
// verdict in TensorFlow Profiler's terms (not, moderately or highly input-bound), with advice read from the
// train pipeline as the manifest wrote it.
#pragma once

#include "ramjet/data/pipeline_spec.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace ramjet::core {

// Seconds of the training loop's wall time. Compute is forward, backward and update less communication; the rest
// (evaluation, checkpoints, bookkeeping) is other.
struct StepTimes {
  double wall_s = 0;
  double input_wait_s = 0;
  double compute_s = 0;
  double communication_s = 0;
};

enum class InputBound { kNot, kModerately, kHighly };

// "not", "moderately", "highly".
const char* input_bound_word(InputBound bound);

// The fraction of the run's time spent waiting for input, judged with the Profiler's thresholds.
InputBound classify_input_bound(double input_wait_fraction);

// What to change in `spec` (data.<name> of the manifest, with the run's epochs) when the run waits for it; empty
// when not input-bound. `cores`: this machine's CPUs.
std::vector<std::string> input_advice(const PipelineSpec& spec, InputBound bound, int cores);

// {"input_bound", "input_wait_fraction", "breakdown": {"wall_s", "input_wait_s", "compute_s",
// "communication_s", "other_s"}, "advice": [...]}
nlohmann::json step_verdict(const StepTimes& times, const PipelineSpec& spec, int cores);

}  // namespace ramjet::core
