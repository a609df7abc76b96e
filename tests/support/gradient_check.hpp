// Backward's gradients against central differences of the forward's loss, for every parameter of a graph: the
// check every op of the cpu backend passes (onednn_gradients_test.cpp, onednn_sequence_test.cpp).
#pragma once

#include "onednn_harness.hpp"

#include <string>
#include <vector>

namespace ramjet::test::cpu_backend {

struct GradCheck {
  double tolerance = 1e-2;  // relative error of each parameter's gradient (as a vector)
  double eps = 2e-3;        // central-difference step (also tried at half of it)
  size_t samples = 48;      // entries checked per parameter (all when fewer)
  float param_scale = 0.5f;
  // Parameters the loss provably does not depend on (an attention's key bias: softmax ignores a constant added to
  // every score of a row), by the end of their names: their gradient must be zero instead.
  std::vector<std::string> invariant;
  std::string backend = "cpu";
};

// Backward's gradients against central differences (f(p + h) - f(p - h)) / 2h of the forward's loss, in double,
// for every parameter; each parameter's checked entries are compared as one vector. The difference is taken at
// h = eps and h = eps / 2: where the two disagree, the step crossed a kink (relu, max, l1) and the entry says
// nothing about the gradient, so it is left out (at most half may be). A wrong gradient still disagrees with both.
void expect_gradients_match(const json& graph, Example inputs, int64_t batch, const GradCheck& c = {});

}  // namespace ramjet::test::cpu_backend
