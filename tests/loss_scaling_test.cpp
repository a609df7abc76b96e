// Dynamic loss scaling on the CPU: ramjet::DynamicLossScaler's rule (growth, backoff, the skipped update, its
// state), the cuda plugin's mixed_float16 policy as a component (its dtypes and settings), and the trainer driving
// it with overflows injected by the reference backend (tests/fixtures/linear_backend.cpp, `overflow_at`): skipped
// updates, the scale the checkpoint keeps, and a resumed run that ends where the uninterrupted one does.
#include "ramjet/plan/plan.hpp"
#include "ramjet/plugin/model_components.hpp"
#include "ramjet/train/checkpoint.hpp"
#include "ramjet/train/trainer.hpp"
#include "small_run.hpp"
#include "test_support.hpp"

#include <ramjet/sdk/loss_scaler.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace ramjet::core;
using namespace ramjet::test;

namespace {

ramjet::DynamicLossScaler scaler(const nlohmann::json& settings) {
  const std::string text = settings.dump();
  ramjet_create_info info{};
  info.struct_size = sizeof info;
  info.abi_version = RAMJET_ABI_VERSION;
  info.config_json = text.c_str();
  info.where = "test#/train/precision";
  return ramjet::DynamicLossScaler(ramjet::Config(info));
}

TEST(DynamicLossScaler, DefaultsAreKerasAndTheRuleGrowsAndBacksOff) {
  auto s = scaler(nlohmann::json::object());
  EXPECT_EQ(s.scale(), 32768.0f);
  for (int i = 0; i < 1999; ++i) ASSERT_FALSE(s.update(false));
  EXPECT_EQ(s.scale(), 32768.0f) << "1999 finite steps: not yet";
  EXPECT_FALSE(s.update(false));
  EXPECT_EQ(s.scale(), 65536.0f) << "the 2000th finite step doubles it";
  EXPECT_EQ(s.good_steps(), 0);

  auto t = scaler({{"initial_scale", 1024}, {"growth_interval", 3}, {"backoff_factor", 0.25}});
  EXPECT_FALSE(t.update(false));
  EXPECT_FALSE(t.update(false));
  EXPECT_TRUE(t.update(true)) << "an overflowing step is skipped";
  EXPECT_EQ(t.scale(), 256.0f);
  EXPECT_EQ(t.good_steps(), 0) << "and the run of finite steps starts again";
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(t.update(false));
  EXPECT_EQ(t.scale(), 512.0f);
}

TEST(DynamicLossScaler, NeverReachesZeroOrInfinity) {
  auto s = scaler({{"initial_scale", 1e-37}});
  for (int i = 0; i < 20; ++i) s.update(true);
  EXPECT_GT(s.scale(), 0.0f);
  auto t = scaler({{"initial_scale", 3e38}, {"growth_interval", 1}});
  for (int i = 0; i < 5; ++i) t.update(false);
  EXPECT_TRUE(std::isfinite(t.scale()));
  EXPECT_EQ(t.scale(), 3e38f);
}

TEST(DynamicLossScaler, StateRoundTripsAndForeignStateIsRefused) {
  auto s = scaler({{"initial_scale", 3.0}, {"growth_interval", 10}});
  for (int i = 0; i < 4; ++i) s.update(false);
  s.update(true);
  s.update(false);
  auto t = scaler({{"growth_interval", 10}});
  t.restore_state(s.save_state());
  EXPECT_EQ(t.scale(), 1.5f);
  EXPECT_EQ(t.good_steps(), 1);

  auto refused = [&](const std::string& state, const std::string& says) {
    try {
      t.restore_state(state);
      ADD_FAILURE() << "accepted " << state;
    } catch (const ramjet::Error& e) {
      EXPECT_EQ(e.status(), RAMJET_ERR_CORRUPT_DATA);
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refused("scale=128", "not (another precision policy's");
  refused("", "0 bytes");
  refused(R"({"scale": 0, "good_steps": 0})", "'scale' must be a positive float32");
  refused(R"({"scale": 1e39, "good_steps": 0})", "'scale' must be a positive float32");
  refused(R"({"scale": 2, "good_steps": 10})", "'good_steps' must be an integer in [0, growth_interval 10)");
  EXPECT_EQ(t.scale(), 1.5f) << "a refused state changes nothing";
}

class MixedFloat16 : public ::testing::Test {
 protected:
  PluginRegistry registry{DiscoveryOptions{{stock_plugin_dir(), fixture_dir("linear_backend")}, {}, {}}};
  TempDir dir;

  CreateArgs args(const nlohmann::json& settings) {
    CreateArgs a;
    a.config = settings;
    a.where = "test#/train/precision";
    return a;
  }
  PrecisionPolicy policy(const nlohmann::json& settings) {
    return PrecisionPolicy(registry.component(RAMJET_KIND_PRECISION_POLICY, "mixed_float16"), args(settings));
  }
};

TEST_F(MixedFloat16, ComputesInFloat16ButKeepsReductionsAndVariablesFloat32) {
  auto p = policy(nlohmann::json::object());
  nlohmann::json graph = {{"nodes", nlohmann::json::array()}};
  for (const char* op : {"dense", "conv2d", "multi_head_attention", "softmax", "batch_norm", "layer_norm", "rms_norm",
                         "sparse_softmax_cross_entropy"})
    graph["nodes"].push_back({{"name", op}, {"op", op}});
  graph["nodes"].push_back({{"name", "act_softmax"}, {"op", "activation"}, {"attrs", {{"activation", "softmax"}}}});
  const nlohmann::json d = p.layer_dtypes(graph);
  for (const char* op : {"dense", "conv2d", "multi_head_attention"}) EXPECT_EQ(d[op]["compute"], "float16") << op;
  for (const char* op : {"softmax", "batch_norm", "layer_norm", "rms_norm", "sparse_softmax_cross_entropy", "act_softmax"})
    EXPECT_EQ(d[op]["compute"], "float32") << op;
  for (const auto& [name, dtypes] : d.items()) EXPECT_EQ(dtypes["variable"], "float32") << name << ": master weights";
  EXPECT_EQ(p.loss_scale(), 32768.0f);
}

TEST_F(MixedFloat16, BadSettingsAreNamed) {
  const auto problems =
      check_component_config(registry.component(RAMJET_KIND_PRECISION_POLICY, "mixed_float16"),
                             args({{"growth_factor", 1}, {"initial_scale", -4}, {"growth", 2}}), "/train/precision");
  std::string all;
  for (const auto& p : problems) all += p.pointer + ": " + p.message + "\n";
  EXPECT_NE(all.find("/train/precision/growth_factor"), std::string::npos) << all;
  EXPECT_NE(all.find("/train/precision/initial_scale"), std::string::npos) << all;
  EXPECT_NE(all.find("/train/precision/growth"), std::string::npos) << all;
}

// The small softmax regression of tests/support (8 steps an epoch) under Adam, checkpointing every step.
nlohmann::json manifest(int64_t epochs, const nlohmann::json& precision, const nlohmann::json& backend,
                        const std::string& checkpoints) {
  nlohmann::json doc = small_run_manifest({.seed = 9, .train_take = 256, .train_batch = 32, .eval_take = 0,
                                           .epochs = epochs});
  doc["train"]["backend"] = backend;
  doc["train"]["optimizer"] = {{"type", "adam"}, {"learning_rate", 0.01}};
  doc["train"]["checkpoint"] = {{"dir", checkpoints}, {"every_steps", 1}, {"keep", 2}};
  if (!precision.is_null()) doc["train"]["precision"] = precision;
  return doc;
}

class TrainerLossScaling : public MixedFloat16 {
 protected:
  struct Outcome {
    nlohmann::json report;
    Checkpoint last;
  };
  Outcome train(const nlohmann::json& doc, const std::string& name, TrainOptions options = {}) {
    write_file(dir / (name + ".json"), doc.dump());
    auto plan = require_plan(load_pipeline_manifest(dir / (name + ".json")), registry);
    Outcome o{train_model(plan, registry, options), {}};
    o.last = load_checkpoint(*latest_checkpoint(dir / doc["train"]["checkpoint"]["dir"].get<std::string>()));
    return o;
  }
  static std::vector<float> weights(const Checkpoint& c) {
    std::vector<float> all;
    for (const auto& e : c.parameters.entries) {
      const float* v = static_cast<const float*>(e.tensor->dl_tensor.data);
      all.insert(all.end(), v, v + element_count(e.tensor->dl_tensor));
    }
    return all;
  }
  static nlohmann::json scaler_state(const Checkpoint& c) {
    const std::string hex = c.trainer.at("loss_scaler").get<std::string>();
    std::string bytes;
    for (size_t i = 0; i < hex.size(); i += 2) bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
    return nlohmann::json::parse(bytes);
  }
};

TEST_F(TrainerLossScaling, PowerOfTwoScalesLeaveTheWeightsBitIdentical) {
  // Scaling by 2^k and unscaling by 2^-k is exact in binary floating point: without overflows, the loss-scaled run
  // is the float32 run, bit for bit, however the scale grows on the way.
  auto plain = train(manifest(1, nullptr, "linear", "plain"), "plain");
  auto scaled = train(manifest(1, {{"type", "mixed_float16"}, {"initial_scale", 1024}, {"growth_interval", 3}},
                               "linear", "scaled"),
                      "scaled");
  EXPECT_EQ(weights(plain.last), weights(scaled.last));
  EXPECT_EQ(scaled.report["train"]["skipped_updates"], 0);
  EXPECT_EQ(scaler_state(scaled.last), (nlohmann::json{{"scale", 1024.0 * 4}, {"good_steps", 2}}))
      << "8 finite steps with growth every 3: doubled twice, 2 steps into the third run";
}

TEST_F(TrainerLossScaling, AnOverflowSkipsTheUpdateAndHalvesTheScale) {
  const nlohmann::json precision = {{"type", "mixed_float16"}, {"initial_scale", 1024}, {"growth_interval", 3}};
  auto clean = train(manifest(1, precision, "linear", "clean"), "clean");
  auto hit = train(manifest(1, precision, {{"type", "linear"}, {"overflow_at", {2, 6}}}, "hit"), "hit");
  EXPECT_EQ(hit.report["train"]["skipped_updates"], 2);
  EXPECT_EQ(hit.last.trainer["skipped_updates"], 2);
  // Steps: 1 ok (good 1), 2 overflow (512, good 0), 3–5 ok (grows to 1024 at 5), 6 overflow (512), 7–8 ok (good 2).
  EXPECT_EQ(scaler_state(hit.last), (nlohmann::json{{"scale", 512.0}, {"good_steps", 2}}));
  EXPECT_NE(weights(clean.last), weights(hit.last)) << "two of the eight batches were never applied";
  for (float w : weights(hit.last)) ASSERT_TRUE(std::isfinite(w)) << "an inf gradient reached the weights";
}

TEST_F(TrainerLossScaling, AResumedRunEndsWhereTheUninterruptedOneDoes) {
  const nlohmann::json precision = {{"type", "mixed_float16"}, {"initial_scale", 1024}, {"growth_interval", 3}};
  // Overflows at steps 2 and 11 of 16; the interrupted run stops after step 5, and its resumed half counts its own
  // backward calls from 1, so step 11 is its 6th.
  auto whole = train(manifest(2, precision, {{"type", "linear"}, {"overflow_at", {2, 11}}}, "whole"), "whole");
  TrainOptions stop;
  stop.stop_after_steps = 5;
  train(manifest(2, precision, {{"type", "linear"}, {"overflow_at", {2, 11}}}, "part"), "first", stop);
  TrainOptions resume;
  resume.resume = true;
  auto resumed = train(manifest(2, precision, {{"type", "linear"}, {"overflow_at", {6}}}, "part"), "second", resume);
  EXPECT_EQ(whole.last.trainer["skipped_updates"], 2);
  EXPECT_EQ(resumed.last.trainer["skipped_updates"], 2) << "the count survives the checkpoint";
  EXPECT_EQ(scaler_state(resumed.last), scaler_state(whole.last));
  // Adam's bias correction counts applied updates: a resumed run that forgot the skipped one would differ.
  EXPECT_EQ(weights(resumed.last), weights(whole.last));
}

}  // namespace
