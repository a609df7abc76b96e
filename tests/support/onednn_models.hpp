// What several oneDNN "cpu" backend tests share beyond the harness: the Adam compile options, random parameters
// for a graph, the small CNN most behavioural tests train, and an element-wise comparison of float vectors.
#pragma once

#include "onednn_harness.hpp"

#include <cstdint>
#include <vector>

namespace ramjet::test::cpu_backend {

// Compile options: float32, Adam with the Keras defaults.
json adam_options(int64_t batch);

// Every parameter of the graph, uniform in [-scale, scale].
Example random_params(const json& graph, uint32_t seed, float scale = 0.5f);

// x [8, 8, 1] -> conv 3x3x4 relu -> max_pool 2 -> flatten -> dense 2, a two-class classifier.
json small_cnn();

// Each of `got` within tol * (1 + |want|) of `want` (a failure for each of the first five that are not).
void expect_near_all(const std::vector<float>& got, const std::vector<float>& want, double tol, const char* what);

}  // namespace ramjet::test::cpu_backend
