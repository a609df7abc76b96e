// The one reading of a pipeline manifest. The loaded document (with `--set` applied) is validated once, every
// problem collected with its JSON pointer in a single pass, into a typed plan: both input pipelines, the model's
// graph, the train and export settings. Train, eval and export take the plan; nothing reads the manifest's JSON
// after this. Component words stay with the components: each named component is asked about its own
// configuration (check_config), the backend about its compile options (check_options) — loading only the
// plugins the manifest names.
#pragma once

#include "ramjet/data/pipeline_spec.hpp"
#include "ramjet/model/graph.hpp"
#include "ramjet/plan/export_config.hpp"
#include "ramjet/plan/pipeline_manifest.hpp"
#include "ramjet/plan/train_config.hpp"
#include "ramjet/plugin/location.hpp"
#include "ramjet/plugin/plugin_registry.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ramjet::core {

struct Plan {
  Origin origin;                          // the manifest file
  uint64_t seed = 0;                      // run seed (default 0)
  std::optional<PipelineSpec> train_data;  // data.train
  std::optional<PipelineSpec> eval_data;   // data.eval
  std::optional<Graph> graph;             // the model section as graph IR
  std::optional<TrainConfig> train;
  std::optional<ExportConfig> exporting;
  // Mistakes that still train (a softmax before a loss that reads logits): printed, never refused.
  std::vector<Problem> warnings;

  // The eval pipeline, or InvalidInput naming /data/eval when the manifest has none.
  const PipelineSpec& require_eval(const std::string& why) const;
  // What a component named in this plan is created with: its own configuration, the manifest's folder, where it
  // was written, the run seed.
  CreateArgs create_args(const ComponentSpec& spec) const;
};

struct PlanReading {
  Plan plan;                      // meaningful only where there were no problems
  std::vector<Problem> problems;  // every problem found, in document order, with its JSON pointer
};

// Validates and reads the whole manifest; never throws for problems in it (they are listed).
PlanReading read_plan(const PipelineManifest& manifest, PluginRegistry& registry);

// The plan of a valid manifest. Throws InvalidInput listing every problem, one per line, as
// "<file>#<pointer>: <message>".
Plan require_plan(const PipelineManifest& manifest, PluginRegistry& registry);

}  // namespace ramjet::core
