// The `cache` stage: remembers each element's output of the `map` transforms so later epochs skip the source
// and the map. "memory" keeps copies in RAM; a file path keeps them on disk, valid across runs for as long as the
// fingerprint of everything upstream (source and map configuration, plugin versions, the sizes and times of the
// files they name) is unchanged.
#pragma once

#include "ramjet/plugin/example.hpp"

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace ramjet::core {

class ElementCache {
 public:
  virtual ~ElementCache() = default;
  // Every element of a whole epoch is present (set by finish_epoch, or a valid file found at start).
  bool complete() const { return complete_.load(std::memory_order_acquire); }
  // Elements in the cached epoch; valid when complete().
  int64_t count() const { return count_; }
  // A copy of element `id`, or nullopt when absent. Thread-safe.
  virtual std::optional<Example> get(int64_t id) const = 0;
  // Stores a copy. Thread-safe; a no-op once complete.
  virtual void put(int64_t id, const Example& example) = 0;
  // An epoch of `count` elements ended: if every id in [0, count) is present the cache becomes complete
  // (a file cache is written out atomically then). Ids must be dense for sequential sources.
  virtual void finish_epoch(int64_t count) = 0;
  // {"kind": "memory"|"file", "complete": .., "elements": .., "bytes": .., "path"?, "reused"?}
  virtual nlohmann::json report() const = 0;

 protected:
  std::atomic<bool> complete_{false};
  int64_t count_ = 0;
};

std::unique_ptr<ElementCache> make_memory_cache();
// Opens `path` if it holds a complete cache with this fingerprint; otherwise starts a new one there.
std::unique_ptr<ElementCache> make_file_cache(const std::filesystem::path& path, uint64_t fingerprint);

}  // namespace ramjet::core
