// Training a model from a manifest: the `train` section drives the backend over the `data.train` input
// pipeline, evaluates on `data.eval` after each epoch, applies schedules and callbacks, and checkpoints.
#pragma once

#include "ramjet/core/example.hpp"
#include "ramjet/core/pipeline_manifest.hpp"
#include "ramjet/core/plugin_registry.hpp"

#include <nlohmann/json.hpp>

#include <iosfwd>

namespace ramjet::core {

struct TrainOptions {
  std::ostream* progress = nullptr;  // null: silent
  bool terminal = false;             // redraw a progress bar in place (else one line per epoch)
  bool resume = false;               // continue from the newest checkpoint in train.checkpoint.dir
  int64_t stop_after_steps = -1;     // for tests and debugging: end after this many optimizer steps
  Example* trained_parameters = nullptr;  // when set, receives the final parameters (for export)
};

// Returns the report: {"train": {...}, "eval": {...}, "data": {"train": pipeline report}}.
nlohmann::json train_model(const PipelineManifest& manifest, PluginRegistry& registry, const TrainOptions& options);

}  // namespace ramjet::core
