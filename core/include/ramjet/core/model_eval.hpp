// Inference over a manifest's evaluation pipeline with a compiled program (float or int8): accuracy from the
// model's output against the labels, steady-state samples/s, and the top-1 predictions.
#pragma once

#include "ramjet/core/backend.hpp"
#include "ramjet/core/pipeline_manifest.hpp"
#include "ramjet/core/plugin_registry.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ramjet::core {

struct Evaluation {
  double accuracy = 0;
  std::optional<double> loss;  // when the program computes one (the float graph with its loss)
  int64_t samples = 0;
  double samples_per_s = 0;    // steady state: full batches after the first, forward calls only
  std::vector<int32_t> predictions;

  nlohmann::json to_json() const;
};

// The training backend named by /train/backend (its configuration, and `threads` when > 0).
std::unique_ptr<Backend> make_training_backend(const PipelineManifest& manifest, PluginRegistry& registry,
                                               int64_t threads = 0);

// Runs `program` over /data/eval. `graph` is the IR the program was compiled from (its first output is scored
// against the batch's labels).
Evaluation evaluate_program(const PipelineManifest& manifest, PluginRegistry& registry, Program& program,
                            const nlohmann::json& graph, bool keep_predictions = false);

struct EvalOptions {
  std::optional<std::filesystem::path> checkpoint;  // default: the newest in /train/checkpoint/dir
  std::string precision = "float32";                // float32 or int8 (calibrated as /export says)
  int64_t batch = 0;                                // 0: the eval pipeline's own
  int64_t threads = 0;
  std::optional<std::filesystem::path> predictions;  // write top-1 classes as little-endian int32
  std::ostream* progress = nullptr;
};

// `ramjet eval`: a checkpoint's accuracy and speed, in float32 or as the int8 model ramjet would export.
nlohmann::json evaluate_checkpoint(const PipelineManifest& manifest, PluginRegistry& registry, const EvalOptions& options);

}  // namespace ramjet::core
