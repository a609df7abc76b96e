// The one evaluation path: a compiled program (float or int8) run over an input pipeline in inference mode, its
// first output scored against the batch's labels by top-1 on the host, its loss averaged when it computes one.
// The trainer's per-epoch validation and `ramjet eval` both use it, so they always agree.
#pragma once

#include "ramjet/data/input_pipeline.hpp"
#include "ramjet/plugin/backend.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <vector>

namespace ramjet::core {

struct Evaluation {
  double accuracy = 0;
  std::optional<double> loss;  // when the program computes one (a float graph with its loss)
  int64_t samples = 0;
  double samples_per_s = 0;    // steady state: full batches after the first, forward calls only
  std::vector<int32_t> predictions;

  nlohmann::json to_json() const;
};

// Runs `program` (compiled from `graph`, whose first output is scored) over every batch of `data`.
// Throws InvalidInput naming `data`'s pointer when the batches carry no labels or there are none.
Evaluation evaluate_program(Program& program, const nlohmann::json& graph, InputPipeline& data, uint64_t seed,
                            bool keep_predictions = false);

}  // namespace ramjet::core
