// Stacking examples into a batch: every tensor gains a leading batch dimension.
#pragma once

#include "ramjet/plugin/example.hpp"

#include <span>

namespace ramjet::core {

// All examples must have the same tensor names, dtypes and shapes; otherwise InvalidInput names the element
// (by its position `first_index + i` in the pipeline) and the tensor that differs.
Example stack_examples(std::span<const Example> examples, int64_t first_index);

}  // namespace ramjet::core

#include <map>
#include <memory>
#include <mutex>

namespace ramjet::core {

// Batches filled in place by the threads that finish their elements: element `position` of an epoch lands in
// slot position % batch of batch position / batch. The element's memory is freed by the thread that made it,
// and no separate stacking pass runs. Used when the batch composition is fixed in advance (deterministic order,
// no skipping).
class BatchAssembly {
 public:
  explicit BatchAssembly(int64_t batch) : batch_(batch) {}
  // Copies the element into its slot. InvalidInput when its tensors differ from the batch's first element's.
  void place(int64_t epoch, int64_t position, const Example& element);
  // Removes and returns batch `index` of `epoch`, holding `count` elements (fewer only at an epoch's end).
  Example take(int64_t epoch, int64_t index, int64_t count);

 private:
  void check_batch_fits(const Example& element) const;

  int64_t batch_;
  std::mutex mutex_;
  std::map<std::pair<int64_t, int64_t>, std::unique_ptr<Example>> pending_;
};

}  // namespace ramjet::core
