// `ramjet eval`: a checkpoint's metrics and speed on the plan's eval pipeline, in float32 or as the int8 model
// ramjet would export (calibrated and quantized as the export section says). Scoring is the trainer's own
// evaluation path (train/evaluation.hpp).
#pragma once

#include "ramjet/plan/plan.hpp"
#include "ramjet/plugin/backend.hpp"
#include "ramjet/plugin/plugin_registry.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>

namespace ramjet::core {

struct EvalOptions {
  std::optional<std::filesystem::path> checkpoint;  // default: the newest in /train/checkpoint/dir
  std::string precision = "float32";                // float32 or int8 (calibrated as /export says)
  int64_t batch = 0;                                // 0: the eval pipeline's own
  int64_t threads = 0;                              // 0: train.threads or the backend's own
  // A folder for what the model predicted: predictions.npy, classes.npy for classifiers, a PNG per example for
  // image outputs (prediction_files.hpp)
  std::optional<std::filesystem::path> predictions;
  std::ostream* progress = nullptr;
};

nlohmann::json evaluate_checkpoint(const Plan& plan, PluginRegistry& registry, const EvalOptions& options);

}  // namespace ramjet::core
