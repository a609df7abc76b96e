// The manifest's `train` section, read and checked (every problem names its JSON pointer).
#pragma once

#include "ramjet/core/pipeline_manifest.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace ramjet::core {

struct CheckpointConfig {
  std::string dir;          // relative to the manifest
  int64_t every_steps = 0;  // 0: only at the end of each epoch
  int64_t keep = 3;         // newest checkpoints kept
};

struct TrainConfig {
  std::string backend = "cpu";
  nlohmann::json backend_config = nlohmann::json::object();  // "backend": {"type": "cpu", ...} passes the rest on
  std::string precision = "float32";
  std::string strategy = "single";  // "single" is built in; any other name is a strategy component
  nlohmann::json strategy_config = nlohmann::json::object();  // "strategy": {"type": "mpi", ...} passes the rest on
  nlohmann::json optimizer;  // {"type", "learning_rate", ...} as the backend receives it
  double learning_rate = 1e-3;
  int64_t epochs = 1;
  nlohmann::json schedule;   // null: constant
  double clip_norm = 0;      // 0: no clipping
  int64_t accumulate = 1;    // micro-batches per optimizer step
  nlohmann::json reduce_lr_on_plateau;  // null when absent
  nlohmann::json early_stopping;        // null when absent
  std::optional<CheckpointConfig> checkpoint;
  int64_t threads = 0;       // backend threads; 0: its default
};

// Reads /train of a manifest. Throws ManifestError for the first problem.
TrainConfig read_train_config(const PipelineManifest& manifest);

}  // namespace ramjet::core
