// Mistakes that still train, so they are warnings and not problems: `validate` prints them and exits 0.
#pragma once

#include "ramjet/model/graph.hpp"
#include "ramjet/plugin/location.hpp"

#include <string>
#include <vector>

namespace ramjet::core {

// A softmax (or, before binary_cross_entropy, a sigmoid) right before a loss that reads logits: the loss applies
// its own softmax to probabilities, so training runs but minimizes the wrong quantity, with gradients squashed
// towards zero. Pointers into the model section under `model_pointer`.
std::vector<Problem> model_warnings(const Graph& graph, const std::string& model_pointer);

}  // namespace ramjet::core
