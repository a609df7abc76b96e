// One input pipeline from the manifest's data section, as tf.data builds one:
//   source -> take -> shard -> map -> cache -> shuffle -> augment -> batch -> prefetch, repeated for `epochs`.
// The order is decided up front per epoch (shuffling random-access sources by index), the per-element work runs
// on a thread pool, and batches are assembled in that order, so the output — random augmentation included — is
// the same at any parallelism. Each transform's seed derives from (run seed, element id, stage), and for
// `augment` also the epoch. The iterator's position can be saved and restored mid-epoch.
#pragma once

#include "ramjet/data/autotune.hpp"
#include "ramjet/data/batcher.hpp"
#include "ramjet/plugin/components.hpp"
#include "ramjet/data/element_cache.hpp"
#include "ramjet/data/parallel_map.hpp"
#include "ramjet/data/pipeline_spec.hpp"
#include "ramjet/data/sequencer.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

namespace ramjet::core {

struct PipelineState {
  int64_t epoch = 0;
  int64_t position = 0;  // the next position of `epoch` to produce
  nlohmann::json to_json() const { return {{"epoch", epoch}, {"position", position}}; }
};

class InputPipeline {
 public:
  // `spec` comes from a validated plan (core/plan).
  InputPipeline(PipelineSpec spec, PluginRegistry& registry, uint64_t run_seed);
  ~InputPipeline();

  const PipelineSpec& spec() const { return spec_; }
  // Elements per epoch when known before reading (random-access sources), else -1.
  int64_t elements_per_epoch() const { return sequencer_->elements_per_epoch(); }
  // The element spec of the source, if it reports one.
  std::optional<nlohmann::json> source_element_spec() const;

  // Continue from a saved state. Call before the first next_batch().
  void restore(const PipelineState& state);
  // The next batch, or nullopt after the last epoch.
  std::optional<Example> next_batch();
  // Where the pipeline stands after the batches returned so far.
  PipelineState state() const { return state_; }

  // Seconds next_batch() spent waiting for input, since construction.
  double input_wait_s() const { return wait_s_; }
  // {"parallelism", "prefetch", "autotune": {...}, "cache": {...}, "skipped", "deterministic"}
  nlohmann::json report() const;

 private:
  WorkResult process(WorkItem item) const;
  void start();
  std::optional<Batch> produce();
  void tune();
  size_t chunks_per_batch() const;
  size_t window_chunks() const;
  int background_threads(int parallelism) const;

  PipelineSpec spec_;
  uint64_t run_seed_;
  std::shared_ptr<DataSource> source_;  // random-access source (null when read sequentially)
  std::vector<Transform> map_, augment_;
  std::unique_ptr<ElementCache> cache_;
  std::unique_ptr<Sequencer> sequencer_;
  std::unique_ptr<Autotuner> autotuner_;
  std::unique_ptr<ParallelMap> parallel_;
  std::unique_ptr<BatchAssembly> assembly_;  // set when elements go straight into their batches
  std::unique_ptr<Batcher> batcher_;
  bool started_ = false;
  bool consumer_helps_ = false;
  bool batch_bytes_known_ = false;
  PipelineState state_;

  using Clock = std::chrono::steady_clock;
  double wait_s_ = 0;
  Clock::time_point window_start_{};
  double window_wait_s_ = 0;
  uint64_t window_busy_ns_ = 0;
  int64_t window_batches_ = 0;
};

}  // namespace ramjet::core
