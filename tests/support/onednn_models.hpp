// What several oneDNN "cpu" backend tests share beyond the harness: the Adam compile options, random parameters
// for a graph, the small CNN most behavioural tests train, and an element-wise comparison of float vectors.
#pragma once

#include "onednn_harness.hpp"

#include <cstdint>
#include <random>
#include <vector>

namespace ramjet::test::cpu_backend {

// Compile options: float32, Adam with the Keras defaults.
json adam_options(int64_t batch);

// Every parameter of the graph, uniform in [-scale, scale].
Example random_params(const json& graph, uint32_t seed, float scale = 0.5f);

// x [8, 8, 1] -> conv 3x3x4 relu -> max_pool 2 -> flatten -> dense 2, a two-class classifier.
json small_cnn();

// `steps` training steps of a program compiled from small_cnn() on separable_batch(batch, {8, 8, 1}, rng): the
// losses, one a step (a failure, and fewer, when a call fails). Then expect_loss_fell: the last three steps' mean
// loss below 0.4 of the first three's.
std::vector<float> train_separable(Harness& h, int steps, int64_t batch, float learning_rate, std::mt19937& rng);
void expect_loss_fell(const std::vector<float>& losses);

// Each of `got` within tol * (1 + |want|) of `want` (a failure for each of the first five that are not).
void expect_near_all(const std::vector<float>& got, const std::vector<float>& want, double tol, const char* what);

}  // namespace ramjet::test::cpu_backend
