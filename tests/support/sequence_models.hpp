// Sequence models as manifest `model` sections, shared by the cpu backend's own tests and the backend conformance
// suite, and the gradient check attention needs.
#pragma once

#include "gradient_check.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace ramjet::test::cpu_backend {

inline nlohmann::json token_loss() { return {{"type", "sparse_softmax_cross_entropy"}}; }

// Attention's gradients pass through softmax twice over: with small weights they are small against float32's
// rounding of the loss, so the differences take a wider step over larger weights (a key bias shifts every score of
// a row alike, so softmax ignores it: its gradient must be zero).
inline GradCheck attention_check(const std::string& backend = "cpu") {
  GradCheck c;
  c.backend = backend;
  c.eps = 1e-2;
  c.param_scale = 1.0f;
  c.invariant = {"key/bias"};
  return c;
}

// Causal self-attention over a [5, 8] sequence, then a dense layer to 5 classes per position.
inline nlohmann::json causal_attention_model() {
  return {{"input", {{"x", {5, 8}}}},
          {"layers",
           {{{"type", "multi_head_attention"}, {"num_heads", 2}, {"key_dim", 3}, {"value_dim", 4},
             {"use_causal_mask", true}},
            {{"type", "dense"}, {"units", 5}}}},
          {"loss", token_loss()}};
}

// Cross-attention over a query, a value and a key of other widths, then attention without biases over its output
// and the value.
inline nlohmann::json cross_attention_model() {
  return {{"input", {{"q", {4, 6}}, {"v", {5, 7}}, {"k", {5, 3}}}},
          {"layers",
           {{{"type", "multi_head_attention"}, {"inputs", {"q", "v", "k"}}, {"num_heads", 3}, {"key_dim", 2},
             {"output_shape", 9}},
            {{"type", "multi_head_attention"}, {"inputs", {"multi_head_attention", "v"}}, {"num_heads", 2},
             {"key_dim", 3}, {"use_bias", false}},
            {{"type", "dense"}, {"units", 5}}}},
          {"loss", token_loss()}};
}

}  // namespace ramjet::test::cpu_backend
