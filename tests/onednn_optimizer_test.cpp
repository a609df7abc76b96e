// The oneDNN "cpu" backend's rmsprop and adamw against their documented rules (plugins/onednn/optimizer.hpp),
// recomputed here in double precision over several steps with a learning rate that changes every step and a
// gradient_scale != 1; rmsprop's slots through get_state/set_state("optimizer") and a resumed program that goes on
// identically; the words refused with their JSON pointers; and rmsprop beside keras.optimizers.RMSprop from the
// tests' venv.
#include "ramjet/plugin/example.hpp"
#include "onednn_harness.hpp"
#include "onednn_models.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>
#include <xmmintrin.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace ramjet::core;
using namespace ramjet::test::cpu_backend;
namespace fs = std::filesystem;

namespace {

constexpr double kRelative = 1e-6;

// A dense layer, a batch_norm (trainable gamma and beta of rank 1, moving statistics that do not learn) and a dense
// classifier: kernels of rank 2, biases and norm parameters of rank 1.
json mixed_rank_graph() {
  Ir ir;
  ir.input("x", {4}).dense("d", "x", 4, 3).batch_norm("bn", "d", {3}).dense("out", "bn", 3, 2);
  return ir.classifier("out");
}

struct ParamSpec {
  std::string name;
  Shape shape;
  bool trainable;
};

const std::vector<ParamSpec> kParams{
    {"d/kernel", {4, 3}, true},       {"d/bias", {3}, true},        {"bn/gamma", {3}, true},
    {"bn/beta", {3}, true},           {"bn/moving_mean", {3}, false}, {"bn/moving_variance", {3}, false},
    {"out/kernel", {3, 2}, true},     {"out/bias", {2}, true}};

using Values = std::map<std::string, std::vector<double>>;

// Values of magnitude in [0.2, 0.8] with either sign: far enough from zero for a relative comparison.
std::vector<float> away_from_zero(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> magnitude(0.2f, 0.8f);
  std::bernoulli_distribution negative(0.5);
  std::vector<float> v(n);
  for (float& x : v) x = negative(rng) ? -magnitude(rng) : magnitude(rng);
  return v;
}

std::vector<double> widened(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// `got` within kRelative of `want`, relative to the largest magnitude in `want` (norm-wise): float32 cannot give a
// value that comes out of a cancellation (a first moment whose gradients changed sign, a parameter passing zero)
// to 1e-6 of itself, only to 1e-6 of the terms that cancelled. A wrong rule is off by far more.
void expect_relative(const std::vector<float>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0;
  for (double w : want) scale = std::max(scale, std::fabs(w));
  ASSERT_GT(scale, 0.0) << what << " is all zeros: nothing to compare";
  int shown = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double error = std::fabs(got[i] - want[i]);
    if (error > kRelative * scale && shown++ < 5)
      ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << ", want " << want[i] << " (error " << error / scale
                    << " of the largest magnitude, " << scale << ")";
  }
}

std::vector<std::string> sorted_names(const Example& e) {
  std::vector<std::string> names;
  for (const auto& entry : e.entries) names.push_back(entry.name);
  std::sort(names.begin(), names.end());
  return names;
}

// One documented update rule over one parameter's values, in double: `slots` are that optimizer's slots in the
// order optimizer.hpp names them.
using Rule = void (*)(const json& o, const ParamSpec& p, double lr, int64_t step, const std::vector<double>& g,
                      std::vector<double>& w, std::vector<std::vector<double>>& slots);

std::vector<std::string> rmsprop_slots(const json& o) {
  std::vector<std::string> names{"velocity"};
  if (o.value("momentum", 0.0) > 0) names.push_back("momentum");
  if (o.value("centered", false)) names.push_back("average_gradient");
  return names;
}

// Keras's RMSprop with weight_decay as L2: g += wd p; v = rho v + (1 - rho) g^2; d = v + eps (centered:
// a = rho a + (1 - rho) g; d = v - a^2 + eps); inc = lr g / sqrt(d); p -= inc, or with momentum mom = mu mom + inc,
// p -= mom.
void rmsprop_rule(const json& o, const ParamSpec&, double lr, int64_t, const std::vector<double>& grad,
                  std::vector<double>& w, std::vector<std::vector<double>>& slots) {
  const double rho = o.value("rho", 0.9), mu = o.value("momentum", 0.0), eps = o.value("epsilon", 1e-7);
  const double wd = o.value("weight_decay", 0.0);
  const bool centered = o.value("centered", false);
  std::vector<double>& ms = slots[0];
  for (size_t i = 0; i < w.size(); ++i) {
    const double g = grad[i] + wd * w[i];
    ms[i] = rho * ms[i] + (1 - rho) * g * g;
    double denominator = ms[i] + eps;
    if (centered) {
      std::vector<double>& avg = slots[mu > 0 ? 2 : 1];
      avg[i] = rho * avg[i] + (1 - rho) * g;
      denominator = ms[i] - avg[i] * avg[i] + eps;
    }
    const double increment = lr * g / std::sqrt(denominator);
    if (mu > 0) {
      slots[1][i] = mu * slots[1][i] + increment;
      w[i] -= slots[1][i];
    } else {
      w[i] -= increment;
    }
  }
}

// AdamW: the decoupled decay p -= lr wd p for parameters of rank >= 2 (every one with decay_all), then Adam without
// L2.
void adamw_rule(const json& o, const ParamSpec& p, double lr, int64_t step, const std::vector<double>& grad,
                std::vector<double>& w, std::vector<std::vector<double>>& slots) {
  const double b1 = o.value("beta_1", 0.9), b2 = o.value("beta_2", 0.999), eps = o.value("epsilon", 1e-7);
  const double wd = o.value("weight_decay", 0.004);
  const bool decayed = o.value("decay_all", false) || p.shape.size() >= 2;
  const double alpha = lr * std::sqrt(1 - std::pow(b2, step)) / (1 - std::pow(b1, step));
  std::vector<double>& m = slots[0];
  std::vector<double>& v = slots[1];
  for (size_t i = 0; i < w.size(); ++i) {
    if (decayed) w[i] -= lr * wd * w[i];
    m[i] = b1 * m[i] + (1 - b1) * grad[i];
    v[i] = b2 * v[i] + (1 - b2) * grad[i] * grad[i];
    w[i] -= alpha * m[i] / (std::sqrt(v[i]) + eps);
  }
}

constexpr float kGradientScale = 0.75f;
const std::vector<float> kRates{0.05f, 0.01f, 0.08f, 0.03f, 0.02f};

// Runs `optimizer` on mixed_rank_graph() for kRates.size() steps of random gradients set through
// set_state("gradients"), and the rule beside it in double; after every step, every parameter and slot must agree.
// Returns the final parameters.
Example follow_rule(const json& optimizer, Rule rule, const std::vector<std::string>& slot_names, uint32_t seed) {
  Harness h;
  const Status compiled = h.compile(mixed_rank_graph(), {{"batch", 4}, {"optimizer", optimizer}});
  EXPECT_TRUE(compiled.ok()) << compiled.message;
  if (!compiled.ok()) return {};
  std::mt19937 rng(seed);
  Example params;
  Values w;
  for (const ParamSpec& p : kParams) {
    const std::vector<float> v = away_from_zero(static_cast<size_t>(count_of(p.shape)), rng);
    put(params, p.name, p.shape, v);
    w[p.name] = widened(v);
  }
  EXPECT_TRUE(h.set_state("parameters", params).ok());
  std::map<std::string, std::vector<std::vector<double>>> slots;
  std::vector<std::string> want_slots;
  for (const ParamSpec& p : kParams)
    if (p.trainable) {
      slots[p.name].assign(slot_names.size(), std::vector<double>(w[p.name].size(), 0.0));
      for (const auto& s : slot_names) want_slots.push_back(p.name + "/" + s);
    }
  std::sort(want_slots.begin(), want_slots.end());
  // Each gradient element keeps its sign from step to step (its magnitude changes), as in a steady descent: moments
  // that cancel to nearly nothing would measure float32's cancellation, not the rule.
  std::map<std::string, std::vector<float>> signs;
  for (const ParamSpec& p : kParams)
    if (p.trainable)
      for (float x : away_from_zero(w[p.name].size(), rng)) signs[p.name].push_back(x < 0 ? -1.0f : 1.0f);

  for (int64_t step = 1; step <= static_cast<int64_t>(kRates.size()); ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const float lr = kRates[static_cast<size_t>(step - 1)];
    Example grads;
    std::map<std::string, std::vector<double>> scaled;
    for (const ParamSpec& p : kParams) {
      if (!p.trainable) continue;
      std::vector<float> g = away_from_zero(w[p.name].size(), rng);
      for (size_t i = 0; i < g.size(); ++i) g[i] = std::fabs(g[i]) * signs[p.name][i];
      put(grads, p.name, p.shape, g);
      for (float x : g) scaled[p.name].push_back(static_cast<double>(x) * kGradientScale);
    }
    const Status set = h.set_state("gradients", grads);
    EXPECT_TRUE(set.ok()) << set.message;
    const Status updated = h.update(step, lr, kGradientScale);
    EXPECT_TRUE(updated.ok()) << updated.message;
    for (const ParamSpec& p : kParams)
      if (p.trainable) rule(optimizer, p, lr, step, scaled[p.name], w[p.name], slots[p.name]);

    Example got = h.state("parameters"), got_slots = h.state("optimizer");
    for (const ParamSpec& p : kParams) {
      if (p.trainable) expect_relative(values(got, p.name), w[p.name], p.name);
      else EXPECT_EQ(widened(values(got, p.name)), w[p.name]) << p.name << " does not learn";
    }
    EXPECT_EQ(sorted_names(got_slots), want_slots);
    for (const ParamSpec& p : kParams)
      if (p.trainable)
        for (size_t k = 0; k < slot_names.size(); ++k) {
          const std::string name = p.name + "/" + slot_names[k];
          if (got_slots.find(name) != nullptr) expect_relative(values(got_slots, name), slots[p.name][k], name);
        }
  }
  return h.state("parameters");
}

}  // namespace

// Gradients of 1e-20: their squares (1e-40) and the second moments built from them are subnormal floats, which the
// update flushes to zero (optimizer.cpp: each square root and division of one took a microcode assist), so those
// moments are exactly 0, while the first moments (1e-21) are ordinary floats and kept. The caller's thread gets its
// floating-point mode back. A 128 x 128 kernel takes the plan's threads and, where allowed, AVX-512's loop.
TEST(OnednnOptimizer, SubnormalSecondMomentsAreFlushedAndTheCallersModeIsKept) {
  const json g = Ir().input("x", {128}).dense("d", "x", 128, 128).dense("out", "d", 128, 2).classifier("out");
  for (const json& optimizer : {json{{"type", "adam"}}, json{{"type", "rmsprop"}}}) {
    SCOPED_TRACE(optimizer.dump());
    Harness h(json{{"threads", 2}});
    ASSERT_TRUE(h.compile(g, {{"batch", 4}, {"optimizer", optimizer}}).ok());
    Example params = random_params(g, 3, 0.5f), grads;
    ASSERT_TRUE(h.set_state("parameters", params).ok());
    for (const auto& [name, spec] : g["params"].items()) {
      const Shape shape = spec["shape"].get<Shape>();
      put(grads, name, shape, std::vector<float>(static_cast<size_t>(count_of(shape)), 1e-20f));
    }
    ASSERT_TRUE(h.set_state("gradients", grads).ok());
    const unsigned mode = _mm_getcsr();
    ASSERT_TRUE(h.update(1, 0.01f).ok());
    EXPECT_EQ(_mm_getcsr(), mode);
    Example slots = h.state("optimizer");
    const bool adam = optimizer["type"] == "adam";
    for (const auto& [name, spec] : g["params"].items()) {
      for (float v : values(slots, name + (adam ? "/v" : "/velocity"))) ASSERT_EQ(v, 0.0f) << name;
      if (adam) {
        for (float m : values(slots, name + "/m")) ASSERT_NEAR(m, 1e-21f, 1e-27f) << name;
      }
    }
  }
}

TEST(OnednnOptimizer, RmspropFollowsKerasRule) {
  const std::vector<json> variants{
      {{"type", "rmsprop"}},
      {{"type", "rmsprop"}, {"centered", true}},
      {{"type", "rmsprop"}, {"momentum", 0.9}},
      {{"type", "rmsprop"}, {"rho", 0.8}, {"momentum", 0.5}, {"centered", true}, {"epsilon", 1e-4},
       {"weight_decay", 0.01}},
  };
  uint32_t seed = 40;
  for (const json& o : variants) {
    SCOPED_TRACE(o.dump());
    follow_rule(o, &rmsprop_rule, rmsprop_slots(o), seed++);
  }
}

TEST(OnednnOptimizer, AdamwDecaysOnlyMatricesUnlessDecayAll) {
  const json by_rank{{"type", "adamw"}, {"weight_decay", 0.1}, {"beta_1", 0.8}};
  const json all{{"type", "adamw"}, {"weight_decay", 0.1}, {"beta_1", 0.8}, {"decay_all", true}};
  // adamw's rule without weight decay is adam's.
  const json adam{{"type", "adam"}, {"beta_1", 0.8}, {"weight_decay", 0.0}};
  Example decayed_by_rank, decayed_all, undecayed;
  {
    SCOPED_TRACE("default: rank >= 2 only");
    decayed_by_rank = follow_rule(by_rank, &adamw_rule, {"m", "v"}, 50);
  }
  {
    SCOPED_TRACE("decay_all");
    decayed_all = follow_rule(all, &adamw_rule, {"m", "v"}, 50);
  }
  {
    SCOPED_TRACE("adam");
    undecayed = follow_rule(adam, &adamw_rule, {"m", "v"}, 50);
  }
  // The same start and gradients in all three: by default, the parameters of rank 1 take adam's steps exactly, and
  // those of rank >= 2 decay's as with decay_all.
  for (const ParamSpec& p : kParams) {
    if (!p.trainable) continue;
    const std::vector<float> by_rank_values = values(decayed_by_rank, p.name);
    if (p.shape.size() >= 2) {
      EXPECT_EQ(by_rank_values, values(decayed_all, p.name)) << p.name << " is decayed in both";
      EXPECT_NE(by_rank_values, values(undecayed, p.name)) << p.name << " is decayed";
    } else {
      EXPECT_EQ(by_rank_values, values(undecayed, p.name)) << p.name << " is not decayed by default";
      EXPECT_NE(by_rank_values, values(decayed_all, p.name)) << p.name << " is decayed with decay_all";
    }
  }
}

TEST(OnednnOptimizer, RmspropSlotsRoundTripAndResume) {
  const json g = small_cnn();
  std::mt19937 rng(61);
  std::vector<Example> batches;
  for (int i = 0; i < 4; ++i) batches.push_back(separable_batch(8, {8, 8, 1}, rng));
  const json options = {{"batch", 8},
                        {"optimizer", {{"type", "rmsprop"}, {"momentum", 0.9}, {"centered", true}, {"weight_decay", 0.01}}}};
  const std::vector<float> rates{0.01f, 0.004f, 0.02f, 0.007f};
  auto step = [&](Harness& h, int64_t t) {
    Example out;
    ASSERT_TRUE(h.forward(batches[static_cast<size_t>(t - 1)], out, true).ok());
    ASSERT_TRUE(h.backward().ok());
    const Status s = h.update(t, rates[static_cast<size_t>(t - 1)], 0.5f);
    ASSERT_TRUE(s.ok()) << s.message;
  };

  Harness a;
  ASSERT_TRUE(a.compile(g, options).ok());
  Example start = random_params(g, 62, 0.3f);
  ASSERT_TRUE(a.set_state("parameters", start).ok());
  step(a, 1);
  step(a, 2);
  Example slots = a.state("optimizer"), p2 = a.state("parameters");
  std::vector<std::string> want;
  for (const char* param : {"conv/bias", "conv/kernel", "fc/bias", "fc/kernel"})
    for (const char* slot : {"average_gradient", "momentum", "velocity"}) want.push_back(std::string(param) + "/" + slot);
  ASSERT_EQ(sorted_names(slots), want);
  for (const auto& name : want) {
    double norm = 0;
    for (float v : values(slots, name)) norm += std::fabs(v);
    EXPECT_GT(norm, 0.0) << name << ": two steps filled it";
  }

  // Restored from a's parameters and slots, b takes the same next steps, bit for bit; c, restored from the
  // parameters alone, does not (the slots matter).
  Harness b, c;
  for (Harness* h : {&b, &c}) {
    ASSERT_TRUE(h->compile(g, options).ok());
    ASSERT_TRUE(h->set_state("parameters", p2).ok());
  }
  const Status restored = b.set_state("optimizer", slots);
  ASSERT_TRUE(restored.ok()) << restored.message;
  EXPECT_EQ(sorted_names(b.state("optimizer")), want);
  for (const auto& name : want) {
    Example back = b.state("optimizer");
    EXPECT_EQ(values(back, name), values(slots, name)) << name;
  }
  for (int64_t t = 3; t <= 4; ++t)
    for (Harness* h : {&a, &b, &c}) step(*h, t);
  Example pa = a.state("parameters"), pb = b.state("parameters"), pc = c.state("parameters");
  Example sa = a.state("optimizer"), sb = b.state("optimizer");
  for (const auto& e : pa.entries) EXPECT_EQ(values(pa, e.name), values(pb, e.name)) << e.name;
  for (const auto& e : sa.entries) EXPECT_EQ(values(sa, e.name), values(sb, e.name)) << e.name;
  EXPECT_NE(values(pa, "fc/kernel"), values(pc, "fc/kernel")) << "zero slots must change the next steps";

  // Only this optimizer's slots, in their parameters' shapes.
  Example foreign;
  put(foreign, "fc/kernel/m", {36, 2}, std::vector<float>(72));
  EXPECT_EQ(b.set_state("optimizer", foreign).code, RAMJET_ERR_INVALID_ARGUMENT) << "rmsprop has no m slot";
  Example misshapen;
  put(misshapen, "fc/kernel/velocity", {2, 36}, std::vector<float>(72));
  EXPECT_EQ(b.set_state("optimizer", misshapen).code, RAMJET_ERR_INVALID_ARGUMENT);
  Harness plain;
  ASSERT_TRUE(plain.compile(g, {{"batch", 8}, {"optimizer", {{"type", "rmsprop"}}}}).ok());
  EXPECT_EQ(sorted_names(plain.state("optimizer")),
            (std::vector<std::string>{"conv/bias/velocity", "conv/kernel/velocity", "fc/bias/velocity",
                                      "fc/kernel/velocity"}));
  Example momentum;
  put(momentum, "fc/kernel/momentum", {36, 2}, std::vector<float>(72));
  EXPECT_EQ(plain.set_state("optimizer", momentum).code, RAMJET_ERR_INVALID_ARGUMENT)
      << "rmsprop without momentum keeps no momentum slot";
}

TEST(OnednnOptimizer, CompileRefusesBadWordsWithPointers) {
  const json g = mixed_rank_graph();
  struct Case {
    json optimizer;
    std::vector<std::string> fragments;
  };
  const std::vector<Case> cases{
      {{{"type", "rmsprop"}, {"rho", 1}}, {"/optimizer/rho: must be < 1"}},
      {{{"type", "rmsprop"}, {"rho", -0.5}, {"momentum", 1.0}, {"epsilon", 0}},
       {"/optimizer/rho: must be >= 0", "/optimizer/momentum: must be < 1", "/optimizer/epsilon: must be > 0"}},
      {{{"type", "rmsprop"}, {"centered", "yes"}}, {"/optimizer/centered: must be true or false"}},
      {{{"type", "rmsprop"}, {"rhoo", 0.9}}, {"/optimizer/rhoo: unknown field 'rhoo' (did you mean 'rho'?)"}},
      {{{"type", "rmsprop"}, {"beta_1", 0.9}}, {"/optimizer/beta_1: unknown field"}},
      {{{"type", "rmsprop"}, {"decay_all", true}}, {"/optimizer/decay_all: unknown field"}},
      {{{"type", "adam"}, {"decay_all", true}}, {"/optimizer/decay_all: unknown field"}},
      {{{"type", "adamw"}, {"decay_all", 1}}, {"/optimizer/decay_all: must be true or false"}},
      {{{"type", "adamw"}, {"decay_al", true}}, {"/optimizer/decay_al: unknown field 'decay_al' (did you mean "
                                                 "'decay_all'?)"}},
      {{{"type", "adamw"}, {"rho", 0.9}}, {"/optimizer/rho: unknown field"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.optimizer.dump());
    Harness h;
    const Status s = h.compile(g, {{"batch", 4}, {"optimizer", c.optimizer}});
    EXPECT_EQ(s.code, RAMJET_ERR_INVALID_ARGUMENT) << s.message;
    for (const auto& f : c.fragments) EXPECT_NE(s.message.find(f), std::string::npos) << s.message;
  }
  Harness h;
  const Status unsupported = h.compile(g, {{"batch", 4}, {"optimizer", {{"type", "rmsprob"}}}});
  EXPECT_EQ(unsupported.code, RAMJET_ERR_UNSUPPORTED) << unsupported.message;
  EXPECT_NE(unsupported.message.find("did you mean 'rmsprop'?"), std::string::npos) << unsupported.message;
  for (const json& fine : {json{{"type", "rmsprop"}, {"rho", 0}, {"momentum", 0.99}, {"epsilon", 1e-3},
                                {"centered", true}, {"weight_decay", 0.1}, {"learning_rate", 0.01}},
                           json{{"type", "adamw"}, {"decay_all", false}}}) {
    Harness ok;
    const Status s = ok.compile(g, {{"batch", 4}, {"optimizer", fine}});
    EXPECT_TRUE(s.ok()) << fine.dump() << ": " << s.message;
  }
}

// ---- beside Keras ------------------------------------------------------------------------------------------------

namespace {

// keras.optimizers.RMSprop over argv[1]'s cases: {"options": {...}, "w": [...], "steps": [{"lr": x, "g": [...]}]}.
// Prints, as its last line, each case's variable and slots (Keras's velocity, momentum, average_gradient).
constexpr const char* kKerasRmsprop = R"(
import json, os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np
import keras

out = []
for case in json.load(open(sys.argv[1])):
    o = case["options"]
    opt = keras.optimizers.RMSprop(learning_rate=0.001, rho=o.get("rho", 0.9), momentum=o.get("momentum", 0.0),
                                   epsilon=o.get("epsilon", 1e-7), centered=o.get("centered", False))
    var = keras.Variable(np.array(case["w"], dtype="float32"))
    for step in case["steps"]:
        opt.learning_rate = step["lr"]
        opt.apply_gradients([(np.array(step["g"], dtype="float32"), var)])
    slots = {"velocity": opt._velocities[0]}
    if opt._momentums: slots["momentum"] = opt._momentums[0]
    if opt._average_gradients: slots["average_gradient"] = opt._average_gradients[0]
    out.append({"w": np.asarray(var.numpy(), dtype="float64").tolist(),
                "slots": {k: np.asarray(v.numpy(), dtype="float64").tolist() for k, v in slots.items()}})
print(json.dumps(out))
)";

// Why Keras cannot be used here, or nothing.
std::optional<std::string> without_keras() {
  const fs::path python = ramjet::test::venv_python();
  if (!fs::exists(python)) return "no Python venv at " + python.string() + "; `./dev test` creates it";
  const auto r = ramjet::test::run(ramjet::test::quote(python.string()) + " -c 'import keras' 2>&1");
  if (r.exit_code != 0) return "Keras is not importable from " + python.string() + ": " + r.output.substr(0, 300);
  return std::nullopt;
}

}  // namespace

TEST(OnednnOptimizer, RmspropMatchesKeras) {
  if (auto why = without_keras()) GTEST_SKIP() << "keras.optimizers.RMSprop is the peer here: " << *why;
  // One parameter, d/bias of a dense layer (3 values), through the plugin; the same numbers through Keras. The
  // gradient_scale is a power of two, so both see the same float32 gradients.
  const json g = Ir().input("x", {2}).dense("d", "x", 2, 3).classifier("d");
  const std::vector<float> start{0.5f, -0.25f, 1.5f};
  const std::vector<std::vector<float>> gradients{{0.2f, -1.0f, 0.01f}, {0.3f, 0.5f, -0.02f}, {-0.1f, 0.7f, 0.04f},
                                                 {0.05f, -0.3f, 0.0f}};
  const std::vector<float> rates{0.01f, 0.1f, 0.03f, 0.05f};
  constexpr float kScale = 2.0f;
  const std::vector<json> variants{json::object(), {{"centered", true}}, {{"momentum", 0.9}},
                                   {{"rho", 0.7}, {"momentum", 0.5}, {"centered", true}, {"epsilon", 1e-3}}};

  json cases = json::array();
  std::vector<Example> ours;
  for (const json& variant : variants) {
    json o = variant;
    o["type"] = "rmsprop";
    Harness h;
    const Status compiled = h.compile(g, {{"batch", 1}, {"optimizer", o}});
    ASSERT_TRUE(compiled.ok()) << compiled.message;
    Example params = random_params(g, 70);
    put(params, "d/bias", {3}, start);
    ASSERT_TRUE(h.set_state("parameters", params).ok());
    json steps = json::array();
    for (size_t t = 0; t < gradients.size(); ++t) {
      Example grads;
      put(grads, "d/kernel", {2, 3}, std::vector<float>(6, 0.0f));
      put(grads, "d/bias", {3}, gradients[t]);
      ASSERT_TRUE(h.set_state("gradients", grads).ok());
      ASSERT_TRUE(h.update(static_cast<int64_t>(t + 1), rates[t], kScale).ok());
      std::vector<float> scaled;
      for (float x : gradients[t]) scaled.push_back(x * kScale);
      steps.push_back({{"lr", rates[t]}, {"g", scaled}});
    }
    Example result = h.state("parameters");
    Example slots = h.state("optimizer");
    Example mine;
    put(mine, "w", {3}, values(result, "d/bias"));
    for (const char* s : {"velocity", "momentum", "average_gradient"})
      if (slots.find(std::string("d/bias/") + s) != nullptr) put(mine, s, {3}, values(slots, std::string("d/bias/") + s));
    ours.push_back(std::move(mine));
    cases.push_back({{"options", variant}, {"w", start}, {"steps", steps}});
  }

  ramjet::test::TempDir dir;
  ramjet::test::write_file(dir / "cases.json", cases.dump());
  ramjet::test::write_file(dir / "keras_rmsprop.py", kKerasRmsprop);
  const auto r = ramjet::test::run(ramjet::test::quote(ramjet::test::venv_python().string()) + " " +
                                   ramjet::test::quote((dir / "keras_rmsprop.py").string()) + " " +
                                   ramjet::test::quote((dir / "cases.json").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto last = r.output.find_last_of('\n', r.output.size() - 2);
  const json keras = json::parse(last == std::string::npos ? r.output : r.output.substr(last + 1));
  ASSERT_EQ(keras.size(), variants.size());
  for (size_t k = 0; k < variants.size(); ++k) {
    SCOPED_TRACE(variants[k].dump());
    expect_relative(values(ours[k], "w"), keras[k]["w"].get<std::vector<double>>(), "w");
    std::vector<std::string> slot_names;
    for (const auto& [name, v] : keras[k]["slots"].items()) {
      slot_names.push_back(name);
      expect_relative(values(ours[k], name), v.get<std::vector<double>>(), name);
    }
    std::sort(slot_names.begin(), slot_names.end());
    std::vector<std::string> mine = sorted_names(ours[k]);
    mine.erase(std::find(mine.begin(), mine.end(), "w"));
    EXPECT_EQ(mine, slot_names) << "the same slots as Keras";
  }
}
