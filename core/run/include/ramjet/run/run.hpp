// `ramjet run` and `ramjet pipeline` over a validated plan: training (then export), or driving the input
// pipelines alone and reporting what flowed through them.
#pragma once

#include "ramjet/plan/plan.hpp"
#include "ramjet/plugin/plugin_registry.hpp"

#include <nlohmann/json.hpp>

#include <iosfwd>

namespace ramjet::core {

struct RunOptions {
  std::ostream* progress = nullptr;  // human-readable lines; null for none
  bool terminal = false;             // progress may redraw a bar in place
  bool resume = false;               // training: continue from the newest checkpoint
};

// With a `train` section: trains the model (see trainer.hpp). Without: drives the input pipelines and reports
// what flowed through them. Returns the JSON report. Throws InvalidInput / RuntimeFailure.
nlohmann::json run_pipeline(const Plan& plan, PluginRegistry& registry, const RunOptions& options);

// `ramjet pipeline`: drives one input pipeline ("train" or "eval") with no consumer work at all, the way tf.data
// pipelines are benchmarked, and reports throughput, the tuned settings and peak memory.
nlohmann::json iterate_pipeline(const Plan& plan, const std::string& name, PluginRegistry& registry,
                                const RunOptions& options);

// The process's peak resident set size in bytes (getrusage).
int64_t peak_rss_bytes();

}  // namespace ramjet::core
