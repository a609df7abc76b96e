// Training a model as the plan says: the `train` settings drive the backend over the train input pipeline,
// evaluate on the eval pipeline after each epoch, apply schedules and callbacks, and checkpoint.
#pragma once

#include "ramjet/plan/plan.hpp"
#include "ramjet/plugin/backend.hpp"
#include "ramjet/plugin/example.hpp"
#include "ramjet/plugin/plugin_registry.hpp"

#include <nlohmann/json.hpp>

#include <iosfwd>
#include <memory>

namespace ramjet::core {

struct TrainOptions {
  std::ostream* progress = nullptr;  // null: silent
  bool terminal = false;             // redraw a progress bar in place (else one line per epoch)
  bool resume = false;               // continue from the newest checkpoint in train.checkpoint.dir
  int64_t stop_after_steps = -1;     // for tests and debugging: end after this many optimizer steps
  Example* trained_parameters = nullptr;  // when set, receives the final parameters (for export)
};

// The backend the plan's train section names, with its configuration and `threads` (when > 0, else
// train.threads). The trainer, `ramjet eval` and export all make it here.
std::unique_ptr<Backend> make_training_backend(const Plan& plan, PluginRegistry& registry, int64_t threads = 0);

// Trains the model of a plan with a train section. Returns the report:
// {"train": {...}, "eval": {...}, "data": {"train": pipeline report}}. Throws InvalidInput / RuntimeFailure.
nlohmann::json train_model(const Plan& plan, PluginRegistry& registry, const TrainOptions& options);

}  // namespace ramjet::core
