// Decides the order of work: which element comes at each position of each epoch. Applies take, shard and
// shuffle, and marks epoch ends. Random-access sources are shuffled by index (no element is held in memory);
// sequential sources through a bounded buffer of raw elements. After a complete cache, any source is read back
// from the cache by index.
#pragma once

#include "ramjet/data/element_cache.hpp"
#include "ramjet/data/sequential_reader.hpp"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace ramjet::core {

class ShuffleState;

struct WorkItem {
  enum class Kind { kElement, kEpochEnd, kStreamEnd };
  Kind kind = Kind::kElement;
  int64_t epoch = 0;
  int64_t position = 0;  // elements: position in the epoch; epoch end: the epoch's element count
  int64_t id = 0;        // element id: source index (random access) or stream position after take and shard
  bool from_cache = false;
  std::optional<Example> raw;  // sequential sources: the element as read
};

struct SequencerConfig {
  int64_t epochs = 1;
  int64_t take = -1;
  int64_t shuffle = 0;
  int64_t shard_count = 1;
  int64_t shard_index = 0;
  uint64_t seed = 0;
  bool even_shards = false;  // see PipelineSpec::even_shards
};

class Sequencer {
 public:
  // Random access when `random_access_count >= 0` (then `reader` may be null); else `reader` streams elements.
  Sequencer(SequencerConfig config, int64_t random_access_count, std::unique_ptr<SequentialReader> reader,
            ElementCache* cache);
  ~Sequencer();

  // Not thread-safe: callers serialize. Never blocks on the consumer.
  WorkItem next();
  // Skip to `position` of `epoch` before the first next() (resuming from a checkpoint).
  void start_at(int64_t epoch, int64_t position);
  // Called by the consumer once every result of `epoch` has been taken.
  void epoch_consumed(int64_t epoch);
  // Elements per epoch when known in advance, else -1.
  int64_t elements_per_epoch() const;
  bool random_access() const { return random_access_count_ >= 0; }

 private:
  void begin_epoch();
  int64_t shard_end() const;
  bool pull_raw(std::pair<int64_t, Example>& out);
  std::optional<std::pair<int64_t, Example>> next_raw();

  SequencerConfig config_;
  int64_t random_access_count_;
  std::unique_ptr<SequentialReader> reader_;
  ElementCache* cache_;

  int64_t epoch_ = 0;
  int64_t position_ = 0;
  bool in_epoch_ = false;
  bool done_ = false;
  // Random-access (or cache) epochs: the element ids in order.
  std::vector<int64_t> order_;
  bool from_cache_ = false;
  // Sequential epochs.
  int64_t read_ = 0;   // elements read from the reader this epoch (before shard)
  int64_t kept_ = 0;   // elements kept after take and shard
  std::unique_ptr<ShuffleState> shuffle_;
  bool stream_ended_ = false;
  int64_t last_epoch_count_ = -1;  // elements of the last epoch read from a sequential source

  std::mutex consumed_mutex_;
  std::condition_variable consumed_cv_;
  int64_t consumed_epochs_ = 0;
};

}  // namespace ramjet::core
