// One input pipeline's settings, as the plan reader (core/plan) reads them from a `data.<name>` object of the
// pipeline manifest. The defaults here are the only ones.
#pragma once

#include "ramjet/plugin/components.hpp"
#include "ramjet/plugin/location.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ramjet::core {

struct InterleaveSpec {
  int64_t cycle_length = 1;  // files read at once, elements taken round-robin
  int64_t block_length = 1;  // consecutive elements taken from one file before moving on
  bool parallel = true;      // each open file reads ahead on its own thread
};

enum class OnError { kFail, kSkip };

struct PipelineSpec {
  Origin origin;        // the manifest it came from (messages, relative paths)
  std::string pointer;  // "/data/train"
  ComponentSpec source;
  std::vector<ComponentSpec> map;      // before the cache: deterministic work (decode, resize)
  std::vector<ComponentSpec> augment;  // after the cache and shuffle: random augmentation
  int64_t batch = 1;
  bool drop_remainder = false;
  int64_t epochs = 1;
  int64_t take = -1;                   // elements per epoch from the source; -1: all
  int64_t shuffle = 0;                 // shuffle buffer size; 0: no shuffling
  std::optional<std::string> cache;    // "memory" or a file path
  int64_t parallelism = 0;             // map threads; 0: auto
  int64_t prefetch = -1;               // batches ready ahead; -1: auto
  bool deterministic = true;
  int64_t shard_count = 1;
  int64_t shard_index = 0;
  // Every shard gets the same number of elements (the last count - 1 or fewer are dropped), as data-parallel
  // training needs: ranks that ran different numbers of steps would wait for each other's missing collectives.
  bool even_shards = false;
  std::optional<InterleaveSpec> interleave;
  OnError on_error = OnError::kFail;
  int64_t cpu_budget = 0;              // threads the pipeline may keep busy; 0: the machine's cores
  int64_t memory_budget = 0;           // bytes for prefetched batches and buffers; 0: 1 GiB
};

}  // namespace ramjet::core
