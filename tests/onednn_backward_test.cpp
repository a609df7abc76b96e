// The oneDNN "cpu" backend's backward call: gradient-ready callbacks, loss scale, accumulation, the non-finite
// flag, and gradient views that the optimizer applies.
#include "ramjet/plugin/example.hpp"
#include "onednn_harness.hpp"
#include "onednn_models.hpp"

#include <gtest/gtest.h>

#include "ramjet/plugin/host_api.hpp"
#include "ramjet/plugin/tensor.hpp"

#include <ramjet/sdk/gradient_pieces.hpp>

#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace ramjet::core;
using namespace ramjet::test::cpu_backend;

namespace {
struct ReadyLog {
  std::vector<std::string> names;
  std::vector<float> first_values;
};
void on_ready(void* user, const char* name, DLTensor* gradient) {
  auto* log = static_cast<ReadyLog*>(user);
  log->names.emplace_back(name);
  log->first_values.push_back(static_cast<const float*>(gradient->data)[0]);
}
// Every grad_ready and grad_rows_ready in the order they came: "name" for the whole, "name:rows" for rows.
void log_ready(void* user, const char* name, DLTensor* /*gradient*/) {
  static_cast<std::vector<std::string>*>(user)->emplace_back(name);
}
void log_rows(void* user, const char* name, DLTensor* /*gradient*/, int64_t rows_final) {
  static_cast<std::vector<std::string>*>(user)->push_back(std::string(name) + ":" + std::to_string(rows_final));
}
}  // namespace

TEST(OnednnBackward, GradReadyScaleAccumulateAndNonfinite) {
  Harness h;
  const json g = small_cnn();
  ASSERT_TRUE(h.compile(g, adam_options(8)).ok());
  Example params = random_params(g, 6, 0.3f);
  ASSERT_TRUE(h.set_state("parameters", params).ok());
  std::mt19937 rng(24);
  Example batch = separable_batch(8, {8, 8, 1}, rng), out;

  Harness fresh;  // backward before any training forward
  ASSERT_TRUE(fresh.compile(g, adam_options(8)).ok());
  EXPECT_EQ(fresh.backward().code, RAMJET_ERR_INVALID_ARGUMENT);
  ASSERT_TRUE(h.forward(batch, out, false).ok());
  EXPECT_EQ(h.backward().code, RAMJET_ERR_INVALID_ARGUMENT) << "an inference forward keeps nothing for backward";

  ASSERT_TRUE(h.forward(batch, out, true).ok());
  ReadyLog log;
  int32_t nonfinite = -1;
  ASSERT_TRUE(h.backward(1.0f, false, &on_ready, &log, &nonfinite).ok());
  EXPECT_EQ(nonfinite, 0);
  // Reverse layer order, each parameter once.
  EXPECT_EQ(log.names, (std::vector<std::string>{"fc/kernel", "fc/bias", "conv/kernel", "conv/bias"}));
  Example g1 = h.state("gradients");
  for (size_t i = 0; i < log.names.size(); ++i) EXPECT_EQ(log.first_values[i], values(g1, log.names[i])[0]);

  ASSERT_TRUE(h.backward(4.0f).ok());
  Example g4 = h.state("gradients");
  ASSERT_TRUE(h.backward(1.0f, true).ok());  // accumulate: 4 + 1
  Example g5 = h.state("gradients");
  for (const char* name : {"conv/kernel", "fc/kernel", "conv/bias"}) {
    const auto a = values(g1, name), b = values(g4, name), c = values(g5, name);
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_NEAR(b[i], 4 * a[i], 1e-5 + 1e-4 * std::fabs(a[i])) << name << i;
      EXPECT_NEAR(c[i], 5 * a[i], 1e-5 + 1e-4 * std::fabs(a[i])) << name << i;
    }
  }

  // A NaN weight poisons the loss and every gradient.
  Example poisoned = random_params(g, 6, 0.3f);
  static_cast<float*>(poisoned.find("fc/kernel")->data)[0] = NAN;
  ASSERT_TRUE(h.set_state("parameters", poisoned).ok());
  ASSERT_TRUE(h.forward(batch, out, true).ok());
  ASSERT_TRUE(h.backward(1.0f, false, nullptr, nullptr, &nonfinite).ok());
  EXPECT_EQ(nonfinite, 1);
}

TEST(OnednnBackward, GradientViewsAreWhatTheOptimizerApplies) {
  // get_state("gradients") hands out views: scaling them in place (as an all-reduce would) changes the step.
  const json g = Ir().input("x", {3}).dense("d", "x", 3, 2).classifier("d");
  Harness h;
  ASSERT_TRUE(h.compile(g, {{"batch", 2}, {"optimizer", {{"type", "sgd"}}}}).ok());
  Example params = random_params(g, 7);
  ASSERT_TRUE(h.set_state("parameters", params).ok());
  Example batch = batch_of({3}, 2, 2, 11), out;
  ASSERT_TRUE(h.forward(batch, out, true).ok());
  ASSERT_TRUE(h.backward().ok());
  Example before = h.state("gradients");
  Example views;
  ASSERT_TRUE(h.get_state("gradients", views).ok());
  for (auto& e : views.entries) {
    float* v = static_cast<float*>(e.tensor->dl_tensor.data);
    for (int64_t i = 0; i < element_count(e.tensor->dl_tensor); ++i) v[i] *= 2.0f;
  }
  ASSERT_TRUE(h.update(1, 0.5f).ok());
  Example after = h.state("parameters");
  for (const char* name : {"d/kernel", "d/bias"}) {
    const auto p0 = values(params, name), p1 = values(after, name), g0 = values(before, name);
    for (size_t i = 0; i < p0.size(); ++i) EXPECT_NEAR(p1[i], p0[i] - 0.5f * 2.0f * g0[i], 1e-6) << name << i;
  }
}

TEST(OnednnBackward, ALargeDenseKernelsGradientIsReportedInTheHostsRowPiecesBeforeTheWhole) {
  // 2,200 x 2,048 floats (18 MB): larger than one piece, so the host plans it as two pieces of 1,100 rows and the
  // backend, asked for rows, computes it in the same two blocks and reports each as it lands.
  constexpr int64_t kIn = 2200, kUnits = 2048;
  const int64_t rows = ramjet::gradient_piece_rows(kIn, kUnits * 4);
  ASSERT_EQ(rows, 1100);
  const json g = Ir().input("x", {kIn}).dense("d", "x", kIn, kUnits).classifier("d");
  Harness h;
  ASSERT_TRUE(h.compile(g, {{"batch", 8}, {"optimizer", {{"type", "sgd"}}}}).ok());
  Example params = random_params(g, 5, 0.05f);
  ASSERT_TRUE(h.set_state("parameters", params).ok());
  Example batch = batch_of({kIn}, 8, static_cast<int>(kUnits), 9), out;

  ASSERT_TRUE(h.forward(batch, out, true).ok());
  std::vector<std::string> whole_only;
  ASSERT_TRUE(h.backward(1.0f, false, &log_ready, &whole_only).ok());
  EXPECT_EQ(whole_only, (std::vector<std::string>{"d/kernel", "d/bias"})) << "without grad_rows_ready: the primitive";
  Example reference = h.state("gradients");

  std::vector<std::string> events;
  ASSERT_TRUE(h.backward(1.0f, false, &log_ready, &events, nullptr, &log_rows).ok());
  EXPECT_EQ(events, (std::vector<std::string>{"d/bias", "d/kernel:1100", "d/kernel:2200", "d/kernel"}));
  Example pieces = h.state("gradients");
  ASSERT_TRUE(h.backward(1.0f, true, &log_ready, &events, nullptr, &log_rows).ok());  // accumulate: twice
  Example doubled = h.state("gradients");
  for (const char* name : {"d/kernel", "d/bias"}) {
    const auto a = values(reference, name), b = values(pieces, name), c = values(doubled, name);
    ASSERT_EQ(a.size(), b.size());
    double largest = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      largest = std::max(largest, static_cast<double>(std::fabs(a[i])));
      ASSERT_NEAR(b[i], a[i], 1e-6 + 1e-5 * std::fabs(a[i])) << name << "[" << i << "]";
      ASSERT_NEAR(c[i], 2 * b[i], 1e-6 + 1e-5 * std::fabs(b[i])) << name << "[" << i << "]";
    }
    EXPECT_GT(largest, 1e-4) << name << ": a gradient of zeros would compare equal to anything";
  }
}
