// The oneDNN "cpu" backend's state: which parameters have gradients and optimizer slots, get_state/set_state
// round trips of parameters and slots (adam, adamw, sgd), Adam's step, and what set_state refuses.
#include "ramjet/plugin/example.hpp"
#include "onednn_harness.hpp"
#include "onednn_models.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace ramjet::core;
using namespace ramjet::test::cpu_backend;

TEST(OnednnState, MovingStatisticsHaveNoGradientAndNoOptimizerSlots) {
  Ir ir;
  ir.input("x", {4}).dense("d", "x", 4, 3);
  const json g = ir.batch_norm("bn", "d", {3}).classifier("bn");
  Harness h;
  ASSERT_TRUE(h.compile(g, adam_options(4)).ok());
  Example params = random_params(g, 18);
  ASSERT_TRUE(h.set_state("parameters", params).ok());
  Example batch = batch_of({4}, 4, 3, 19), out;
  ASSERT_TRUE(h.forward(batch, out, true).ok());
  ASSERT_TRUE(h.backward().ok());
  ASSERT_TRUE(h.update(1, 0.1f).ok());
  std::vector<std::string> grads, slots, all;
  for (const auto& e : h.state("gradients").entries) grads.push_back(e.name);
  for (const auto& e : h.state("optimizer").entries) slots.push_back(e.name);
  for (const auto& e : h.state("parameters").entries) all.push_back(e.name);
  EXPECT_EQ(grads, (std::vector<std::string>{"bn/beta", "bn/gamma", "d/bias", "d/kernel"}));
  EXPECT_EQ(slots.size(), 8u);
  EXPECT_EQ(all.size(), 6u) << "the moving statistics are still parameters (checkpoints, export)";
}

TEST(OnednnState, ParametersAndOptimizerSlotsRoundTrip) {
  const json g = small_cnn();
  std::mt19937 rng(25);
  Example b1 = separable_batch(8, {8, 8, 1}, rng), b2 = separable_batch(8, {8, 8, 1}, rng), out;
  for (const char* type : {"adam", "adamw", "sgd"}) {
    SCOPED_TRACE(type);
    json opt = {{"batch", 8}, {"optimizer", {{"type", type}, {"weight_decay", 0.01}}}};
    if (std::string(type) == "sgd") opt["optimizer"].update({{"momentum", 0.9}, {"nesterov", true}});
    Harness a;
    ASSERT_TRUE(a.compile(g, opt).ok());
    Example params = random_params(g, 8, 0.3f);
    ASSERT_TRUE(a.set_state("parameters", params).ok());
    Example got = a.state("parameters");
    for (const auto& e : params.entries) EXPECT_EQ(values(got, e.name), values(params, e.name)) << e.name;
    ASSERT_TRUE(a.forward(b1, out, true).ok());
    ASSERT_TRUE(a.backward().ok());
    ASSERT_TRUE(a.update(1, 0.05f).ok());

    Example slots = a.state("optimizer"), p1 = a.state("parameters");
    std::vector<std::string> names;
    for (const auto& e : slots.entries) names.push_back(e.name);
    const std::vector<std::string> want =
        std::string(type) == "sgd"
            ? std::vector<std::string>{"conv/bias/momentum", "conv/kernel/momentum", "fc/bias/momentum", "fc/kernel/momentum"}
            : std::vector<std::string>{"conv/bias/m", "conv/bias/v", "conv/kernel/m", "conv/kernel/v",
                                       "fc/bias/m",   "fc/bias/v",   "fc/kernel/m",   "fc/kernel/v"};
    EXPECT_EQ(names, want);
    double norm = 0;
    for (float v : values(slots, names[0])) norm += std::fabs(v);
    EXPECT_GT(norm, 0.0) << "the first step filled the slots";

    // A second program restored from the first takes the same next step.
    Harness b;
    ASSERT_TRUE(b.compile(g, opt).ok());
    ASSERT_TRUE(b.set_state("parameters", p1).ok());
    const Status restored = b.set_state("optimizer", slots);
    ASSERT_TRUE(restored.ok()) << restored.message;
    for (Harness* h : {&a, &b}) {
      ASSERT_TRUE(h->forward(b2, out, true).ok());
      ASSERT_TRUE(h->backward().ok());
      ASSERT_TRUE(h->update(2, 0.05f).ok());
    }
    Example pa = a.state("parameters"), pb = b.state("parameters");
    for (const auto& e : pa.entries) EXPECT_EQ(values(pa, e.name), values(pb, e.name)) << e.name;
    Example sa = a.state("optimizer"), sb = b.state("optimizer");
    for (const auto& e : sa.entries) EXPECT_EQ(values(sa, e.name), values(sb, e.name)) << e.name;
  }
}

TEST(OnednnState, AdamStepFollowsKerasFormula) {
  const json g = Ir().input("x", {2}).dense("d", "x", 2, 2).classifier("d");
  Harness h;
  ASSERT_TRUE(h.compile(g, {{"batch", 1}, {"optimizer", {{"type", "adam"}, {"beta_1", 0.8}, {"beta_2", 0.9}, {"epsilon", 1e-3}}}}).ok());
  Example params = random_params(g, 9);
  ASSERT_TRUE(h.set_state("parameters", params).ok());
  Example batch = batch_of({2}, 1, 2, 12), out;
  double m = 0, v = 0, p = values(params, "d/bias")[0];
  for (int step = 1; step <= 3; ++step) {
    ASSERT_TRUE(h.forward(batch, out, true).ok());
    ASSERT_TRUE(h.backward().ok());
    Example grads = h.state("gradients");
    const double grad = values(grads, "d/bias")[0] * 0.5;  // gradient_scale 0.5
    ASSERT_TRUE(h.update(step, 0.1f, 0.5f).ok());
    m = 0.8 * m + 0.2 * grad;
    v = 0.9 * v + 0.1 * grad * grad;
    p -= 0.1 * std::sqrt(1 - std::pow(0.9, step)) / (1 - std::pow(0.8, step)) * m / (std::sqrt(v) + 1e-3);
    Example now = h.state("parameters");
    EXPECT_NEAR(values(now, "d/bias")[0], p, 1e-5) << "step " << step;
  }
}

TEST(OnednnState, SetStateRefusesUnknownNamesAndWrongShapes) {
  Harness h;
  ASSERT_TRUE(h.compile(small_cnn(), adam_options(4)).ok());
  Example unknown;
  put(unknown, "nope/kernel", {2}, {1, 2});
  Status s = h.set_state("parameters", unknown);
  EXPECT_EQ(s.code, RAMJET_ERR_INVALID_ARGUMENT);
  EXPECT_NE(s.message.find("nope/kernel"), std::string::npos) << s.message;
  Example wrong;
  put(wrong, "fc/kernel", {2, 36}, std::vector<float>(72));
  s = h.set_state("parameters", wrong);
  EXPECT_EQ(s.code, RAMJET_ERR_INVALID_ARGUMENT);
  EXPECT_NE(s.message.find("[36, 2]"), std::string::npos) << s.message;
  Example slot;
  put(slot, "fc/kernel/momentum", {36, 2}, std::vector<float>(72));
  EXPECT_EQ(h.set_state("optimizer", slot).code, RAMJET_ERR_INVALID_ARGUMENT) << "adam has no momentum slot";
  Example none;
  EXPECT_EQ(h.get_state("weights", none).code, RAMJET_ERR_INVALID_ARGUMENT);
}
