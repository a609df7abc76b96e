// One input pipeline from the manifest's data section: source -> map -> batch, repeated for `epochs`.
// Elements are produced in source order; each transform sees a seed derived from (run seed, epoch, index).
#pragma once

#include "ramjet/core/components.hpp"
#include "ramjet/core/pipeline_manifest.hpp"

#include <memory>
#include <optional>
#include <vector>

namespace ramjet::core {

struct InputPipelineConfig {
  int64_t batch = 1;
  bool drop_remainder = false;
  int64_t epochs = 1;
  int64_t take = -1;  // elements per epoch; -1 for all
};

class InputPipeline {
 public:
  // `pointer` is the pipeline's JSON pointer, e.g. "/data/train". The manifest must already be valid.
  InputPipeline(const PipelineManifest& manifest, const std::string& pointer, PluginRegistry& registry,
                uint64_t run_seed);

  const InputPipelineConfig& config() const { return config_; }
  const DataSource& source() const { return *source_; }
  // Elements per epoch, or -1 when the source is sequential.
  int64_t elements_per_epoch() const;

  // The next batch, or nullopt after the last epoch.
  std::optional<Example> next_batch();
  int64_t epoch() const { return epoch_; }

 private:
  bool next_element(Example& out);
  void end_epoch();

  InputPipelineConfig config_;
  uint64_t run_seed_;
  std::unique_ptr<DataSource> source_;
  std::vector<Transform> transforms_;
  int64_t cardinality_ = -1;
  int64_t epoch_ = 0;
  int64_t index_ = 0;  // element index within the epoch
  bool started_ = false;
};

}  // namespace ramjet::core
