// The one evaluation path: a compiled program (float or int8) run over an input pipeline in inference mode, the
// output its loss reads scored against the batch's labels by the graph's metrics (metrics.hpp) on the host, its
// loss averaged when it computes one.
// The trainer's per-epoch validation and `ramjet eval` both use it, so they always agree.
#pragma once

#include "ramjet/data/input_pipeline.hpp"
#include "ramjet/plugin/backend.hpp"
#include "ramjet/train/metrics.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ramjet::core {

struct Evaluation {
  MetricValues metrics;        // the graph's metrics ("metrics" in the IR), in its order
  std::optional<double> loss;  // when the program computes one (a float graph with its loss)
  int64_t samples = 0;
  double samples_per_s = 0;    // steady state: full batches after the first, forward calls only
  // With keep_predictions: each example's top class (classifiers), and every scored output as float32, example
  // after example, each of its shape; the model's first input and the labels too where they are float32 (an
  // image-to-image model's degraded input and clean target, beside what it restored).
  struct Kept {
    std::vector<float> values;
    std::vector<int64_t> shape;  // per example
    void append(const DLTensor& batch);
  };
  std::vector<int32_t> predictions;
  Kept outputs, inputs, targets;

  std::optional<double> metric(const std::string& name) const;
  nlohmann::json to_json() const;
};

// Runs `program` (compiled from `graph`, whose scored output is the loss's input or the first) over every batch of `data`.
// Throws InvalidInput naming `data`'s pointer when the batches carry no labels or there are none.
Evaluation evaluate_program(Program& program, const nlohmann::json& graph, InputPipeline& data, uint64_t seed,
                            bool keep_predictions = false);

}  // namespace ramjet::core
