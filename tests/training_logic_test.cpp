// Host-side training logic that needs no backend: learning-rate schedules, ReduceLROnPlateau, EarlyStopping,
// and safetensors checkpoint files.
#include "ramjet/plugin/failure.hpp"
#include "ramjet/plan/train_config.hpp"
#include "ramjet/train/lr_schedule.hpp"
#include "ramjet/train/safetensors.hpp"
#include "ramjet/train/training_callbacks.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

using namespace ramjet::core;
using namespace ramjet::test;

namespace {
std::unique_ptr<LrSchedule> schedule(const nlohmann::json& spec, double lr = 0.1, int64_t total = 100) {
  if (spec.is_null()) return make_lr_schedule(ScheduleConfig{}, lr, total);
  std::vector<Problem> problems;
  auto config = read_schedule(spec, "/train/schedule", problems);
  if (!config) throw ManifestError("m.json#" + problems.at(0).pointer, problems.at(0).pointer, problems.at(0).message);
  return make_lr_schedule(*config, lr, total);
}
}  // namespace

TEST(LrSchedule, ConstantAndStepDecay) {
  EXPECT_DOUBLE_EQ(schedule(nullptr)->at(57), 0.1);
  auto step = schedule({{"type", "step"}, {"step_size", 10}, {"gamma", 0.5}});
  EXPECT_DOUBLE_EQ(step->at(0), 0.1);
  EXPECT_DOUBLE_EQ(step->at(9), 0.1);
  EXPECT_DOUBLE_EQ(step->at(10), 0.05);
  EXPECT_DOUBLE_EQ(step->at(25), 0.025);
  auto piecewise = schedule({{"type", "step"}, {"boundaries", {5, 8}}, {"values", {1.0, 0.5, 0.25}}});
  EXPECT_DOUBLE_EQ(piecewise->at(4), 1.0);
  EXPECT_DOUBLE_EQ(piecewise->at(5), 0.5);
  EXPECT_DOUBLE_EQ(piecewise->at(100), 0.25);
}

TEST(LrSchedule, CosineWarmsUpLinearlyThenDecaysToAlpha) {
  auto cosine = schedule({{"type", "cosine"}, {"warmup_steps", 10}, {"decay_steps", 90}, {"alpha", 0.1}});
  EXPECT_NEAR(cosine->at(0), 0.01, 1e-12);
  EXPECT_NEAR(cosine->at(9), 0.1, 1e-12);
  EXPECT_NEAR(cosine->at(10), 0.1, 1e-12);
  EXPECT_NEAR(cosine->at(55), 0.1 * (0.1 + 0.9 * 0.5), 1e-12);  // half way: cos(pi/2) = 0
  EXPECT_NEAR(cosine->at(100), 0.01, 1e-12);
  EXPECT_NEAR(cosine->at(500), 0.01, 1e-12);
}

TEST(LrSchedule, OneCycleRisesToMaxThenFallsFarBelowTheStart) {
  auto one = schedule({{"type", "one_cycle"}, {"max_lr", 1.0}, {"pct_start", 0.25}}, 0.1, 101);
  EXPECT_NEAR(one->at(0), 1.0 / 25, 1e-12);
  double peak = 0;
  int64_t peak_at = 0;
  for (int64_t s = 0; s < 101; ++s)
    if (one->at(s) > peak) peak = one->at(s), peak_at = s;
  EXPECT_NEAR(peak, 1.0, 1e-12);
  EXPECT_NEAR(static_cast<double>(peak_at), 24, 1);
  EXPECT_NEAR(one->at(100), 1.0 / 25 / 1e4, 1e-12);
}

TEST(LrSchedule, BadSpecsNameTheField) {
  try {
    schedule({{"type", "step"}});
    FAIL();
  } catch (const ManifestError& e) {
    EXPECT_EQ(e.pointer, "/train/schedule/step_size");
  }
  try {
    schedule({{"type", "warmup_cosine_restarts"}});
    FAIL();
  } catch (const ManifestError& e) {
    EXPECT_EQ(e.pointer, "/train/schedule/type");
  }
  EXPECT_THROW(schedule({{"type", "cosine"}, {"alpha", 2}}), ManifestError);
}

TEST(TrainingCallbacks, ReduceLrOnPlateauWaitsPatienceThenCoolsDown) {
  ReduceLrOnPlateau plateau(Monitor::of("val_loss", 0.01), 0.5, 2, 1, 0.01);
  double lr = 0.1;
  lr = plateau.update(1.0, lr);    // first value: best
  lr = plateau.update(0.995, lr);  // not better by min_delta: wait 1
  EXPECT_DOUBLE_EQ(lr, 0.1);
  lr = plateau.update(1.2, lr);  // wait 2 = patience: reduce
  EXPECT_DOUBLE_EQ(lr, 0.05);
  lr = plateau.update(1.3, lr);  // cooldown epoch: no counting
  EXPECT_DOUBLE_EQ(lr, 0.05);
  lr = plateau.update(1.3, lr);
  lr = plateau.update(1.3, lr);
  EXPECT_DOUBLE_EQ(lr, 0.025);
  for (int i = 0; i < 20; ++i) lr = plateau.update(2.0, lr);
  EXPECT_DOUBLE_EQ(lr, 0.01);  // min_lr
}

TEST(TrainingCallbacks, EarlyStoppingTracksTheBestEpochAndMaximisesAccuracy) {
  EarlyStopping stop(Monitor::of("val_accuracy", 0.0), 2, true);
  stop.update(0, 0.80);
  EXPECT_TRUE(stop.improved());
  stop.update(1, 0.85);
  EXPECT_TRUE(stop.improved());
  stop.update(2, 0.84);
  EXPECT_FALSE(stop.improved());
  EXPECT_FALSE(stop.should_stop());
  stop.update(3, 0.85);  // equal is not better
  EXPECT_TRUE(stop.should_stop());
  EXPECT_EQ(stop.best_epoch(), 1);
  EXPECT_DOUBLE_EQ(stop.best(), 0.85);
}

TEST(Safetensors, RoundTripsTensorsAndMetadata) {
  TempDir dir;
  Example tensors;
  tensors.set("w", make_tensor({kDLFloat, 32, 1}, std::vector<int64_t>{2, 3}));
  tensors.set("step", make_tensor({kDLInt, 64, 1}, std::vector<int64_t>{}));
  auto* w = static_cast<float*>(tensors.find("w")->data);
  for (int i = 0; i < 6; ++i) w[i] = 0.5f * static_cast<float>(i);
  *static_cast<int64_t*>(tensors.find("step")->data) = 1234;
  write_safetensors(dir / "c.safetensors", tensors, {{"format", "ramjet"}, {"epoch", "3"}});
  // The layout other readers expect: 8-byte length, JSON header, data 8-byte aligned.
  const std::string raw = read_file(dir / "c.safetensors");
  uint64_t length;
  std::memcpy(&length, raw.data(), 8);
  EXPECT_EQ(length % 8, 0u);
  auto header = nlohmann::json::parse(raw.substr(8, length));
  EXPECT_EQ(header["w"]["dtype"], "F32");
  EXPECT_EQ(header["w"]["shape"], (nlohmann::json{2, 3}));
  EXPECT_EQ(header["__metadata__"]["epoch"], "3");

  TensorFile back = read_safetensors(dir / "c.safetensors");
  EXPECT_EQ(back.metadata.at("format"), "ramjet");
  const auto* wb = static_cast<const float*>(back.tensors.find("w")->data);
  EXPECT_EQ((std::vector<float>(wb, wb + 6)), (std::vector<float>{0, 0.5f, 1, 1.5f, 2, 2.5f}));
  EXPECT_EQ(*static_cast<const int64_t*>(back.tensors.find("step")->data), 1234);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator{}), 1) << "no temporary file left";
}

TEST(Safetensors, CorruptFilesNameTheFileAndOffset) {
  TempDir dir;
  Example tensors;
  tensors.set("w", make_tensor({kDLFloat, 32, 1}, std::vector<int64_t>{4}));
  write_safetensors(dir / "good.safetensors", tensors, {});
  const std::string good = read_file(dir / "good.safetensors");
  auto expect = [&](const std::string& bytes, const std::string& words) {
    write_file(dir / "bad.safetensors", bytes);
    try {
      read_safetensors(dir / "bad.safetensors");
      ADD_FAILURE() << "accepted: " << words;
    } catch (const InvalidInput& e) {
      EXPECT_NE(std::string(e.what()).find((dir / "bad.safetensors").string()), std::string::npos);
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  expect(good.substr(0, good.size() - 4), "lies outside the data");
  expect(good.substr(0, 5), "shorter than the 8-byte header length");
  std::string huge = good;
  huge[6] = 0x7f;
  expect(huge, "runs past the end of the file");
  std::string garbled = good;
  garbled[8] = '#';
  expect(garbled, "header is not JSON");
}
