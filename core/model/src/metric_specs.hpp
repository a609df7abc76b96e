// The model's metrics (`model.metrics`, Keras's compile(metrics=...)): what evaluation scores the first output by,
// beside the loss. Declared as names or objects with their options, or chosen by the loss when absent. Checked here
// against the loss and the output's shape, so a metric that cannot apply is a validation error, not a surprise at
// the end of training.
#pragma once

#include "ramjet/plugin/location.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace ramjet::core::model_rules {

// The IR's "metrics": [{"type": "psnr", "name": "psnr", "max_val": 1.0}, ...] (name: what reports call it,
// "top_5_accuracy" for a top_k_accuracy with k 5) for `declared` (nullptr: chosen by the loss), given
// the IR's loss (null when the model has none) and the scored output's per-example shape. Throws ManifestError
// at the offending pointer under `pointer` (the model's "/metrics").
nlohmann::json metric_specs(const nlohmann::json* declared, const nlohmann::json& loss,
                            const std::vector<int64_t>& output_shape, const Origin& origin, const std::string& pointer);

}  // namespace ramjet::core::model_rules
