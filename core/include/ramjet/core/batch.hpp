// Stacking examples into a batch: every tensor gains a leading batch dimension.
#pragma once

#include "ramjet/core/example.hpp"

#include <span>

namespace ramjet::core {

// All examples must have the same tensor names, dtypes and shapes; otherwise InvalidInput names the element
// (by its position `first_index + i` in the pipeline) and the tensor that differs.
Example stack_examples(std::span<const Example> examples, int64_t first_index);

}  // namespace ramjet::core
