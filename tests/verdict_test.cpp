// The step-time breakdown and the input-bound verdict: TensorFlow Profiler's thresholds, advice read from the
// pipeline as written, and real runs — a deliberately slow pipeline is called input-bound with the parallelism
// advice, a compute-dominated one is not.
#include "ramjet/plan/plan.hpp"
#include "ramjet/train/trainer.hpp"
#include "ramjet/train/verdict.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

using namespace ramjet::core;
using namespace ramjet::test;

namespace {

bool mentions(const std::vector<std::string>& advice, const std::string& words) {
  for (const auto& a : advice)
    if (a.find(words) != std::string::npos) return true;
  return false;
}

std::string listed(const nlohmann::json& advice) { return advice.dump(1); }

PipelineSpec spec_with(int64_t parallelism, int64_t prefetch, bool map, std::optional<std::string> cache) {
  PipelineSpec s;
  s.pointer = "/data/train";
  s.parallelism = parallelism;
  s.prefetch = prefetch;
  if (map) s.map.push_back(ComponentSpec{{{"type", "resize"}, {"size", {448, 448}}}, "/data/train/map/0"});
  s.cache = std::move(cache);
  s.epochs = 3;
  return s;
}

}  // namespace

TEST(Verdict, ThresholdsAreTheProfilers) {
  EXPECT_EQ(classify_input_bound(0.0), InputBound::kNot);
  EXPECT_EQ(classify_input_bound(0.0499), InputBound::kNot);
  EXPECT_EQ(classify_input_bound(0.05), InputBound::kModerately);
  EXPECT_EQ(classify_input_bound(0.1999), InputBound::kModerately);
  EXPECT_EQ(classify_input_bound(0.20), InputBound::kHighly);
  EXPECT_EQ(classify_input_bound(0.97), InputBound::kHighly);
  EXPECT_STREQ(input_bound_word(InputBound::kNot), "not");
  EXPECT_STREQ(input_bound_word(InputBound::kModerately), "moderately");
  EXPECT_STREQ(input_bound_word(InputBound::kHighly), "highly");
}

TEST(Verdict, AdviceComesFromThePipelineAsWritten) {
  const auto serial = input_advice(spec_with(1, 0, true, std::nullopt), InputBound::kHighly, 8);
  EXPECT_TRUE(mentions(serial, "data.train.parallelism is 1: set it to \"auto\"")) << ::testing::PrintToString(serial);
  EXPECT_TRUE(mentions(serial, "data.train.prefetch is 0")) << ::testing::PrintToString(serial);
  EXPECT_TRUE(mentions(serial, "no cache after data.train.map")) << ::testing::PrintToString(serial);
  PipelineSpec one_epoch = spec_with(1, 0, true, std::nullopt);
  one_epoch.epochs = 1;
  EXPECT_FALSE(mentions(input_advice(one_epoch, InputBound::kHighly, 8), "cache")) << "a cache helps from epoch 2 on";

  const auto some_threads = input_advice(spec_with(2, -1, true, "memory"), InputBound::kModerately, 8);
  EXPECT_TRUE(mentions(some_threads, "data.train.parallelism is 2 of 8 cores")) << ::testing::PrintToString(some_threads);
  EXPECT_FALSE(mentions(some_threads, "prefetch"));
  EXPECT_FALSE(mentions(some_threads, "cache"));

  PipelineSpec budget = spec_with(0, -1, false, std::nullopt);
  budget.cpu_budget = 1;
  EXPECT_TRUE(mentions(input_advice(budget, InputBound::kHighly, 4), "data.train.cpu_budget is 1 of 4 cores"));

  // Everything already tuned: the advice says the work itself is too slow, not to turn a knob that is turned.
  const auto tuned = input_advice(spec_with(0, -1, true, "memory"), InputBound::kHighly, 8);
  ASSERT_EQ(tuned.size(), 1u);
  EXPECT_TRUE(mentions(tuned, "still cannot keep up")) << tuned[0];

  EXPECT_TRUE(input_advice(spec_with(1, 0, true, std::nullopt), InputBound::kNot, 8).empty());
}

TEST(Verdict, BreakdownSumsToTheWallTime) {
  const auto v = step_verdict({10.0, 3.0, 5.0, 0.0}, spec_with(1, -1, false, std::nullopt), 4);
  EXPECT_EQ(v["input_bound"], "highly");
  EXPECT_DOUBLE_EQ(v["input_wait_fraction"].get<double>(), 0.3);
  const auto& b = v["breakdown"];
  EXPECT_DOUBLE_EQ(b["wall_s"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(b["input_wait_s"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(b["compute_s"].get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(b["communication_s"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(b["other_s"].get<double>(), 2.0);
  EXPECT_TRUE(mentions(v["advice"].get<std::vector<std::string>>(), "parallelism is 1")) << listed(v["advice"]);
  const auto quiet = step_verdict({10.0, 0.1, 9.0, 0.0}, spec_with(1, -1, false, std::nullopt), 4);
  EXPECT_EQ(quiet["input_bound"], "not");
  EXPECT_TRUE(quiet["advice"].empty());
}

namespace {

class VerdictRun : public ::testing::Test {
 protected:
  PluginRegistry registry{DiscoveryOptions{{stock_plugin_dir(), fixture_dir("linear_backend")}, {}, {}}};
  TempDir dir;

  nlohmann::json train(const nlohmann::json& train_pipeline, int64_t units, int64_t epochs = 1) {
    nlohmann::json source = {{"type", "idx"},
                             {"images", fashion_mnist("train-images-idx3-ubyte.gz").string()},
                             {"labels", fashion_mnist("train-labels-idx1-ubyte.gz").string()},
                             {"num_classes", 10}};
    nlohmann::json data = train_pipeline;
    data["source"] = source;
    const nlohmann::json doc = {
        {"seed", 11},
        {"data", {{"train", data}}},
        {"model",
         {{"input", {{"image", {28, 28, 1}}}},
          {"layers", {{{"type", "flatten"}}, {{"type", "dense"}, {"units", units}}}},
          {"loss", {{"type", "sparse_softmax_cross_entropy"}}}}},
        {"train", {{"backend", "linear"}, {"optimizer", {{"type", "sgd"}, {"learning_rate", 0.01}}}, {"epochs", epochs}}}};
    write_file(dir / "m.json", doc.dump());
    const Plan plan = require_plan(load_pipeline_manifest(dir / "m.json"), registry);
    return train_model(plan, registry, TrainOptions{});
  }
};

}  // namespace

// One thread upscales every 28x28 image to 448x448 and back (about 200k interpolated pixels an element) for a
// model that does 7840 multiply-adds per element: the trainer waits for input nearly all the time.
TEST_F(VerdictRun, ASlowSerialPipelineIsInputBoundWithTheParallelismAdvice) {
  const nlohmann::json pipeline = {{"map",
                                    {{{"type", "resize"}, {"size", {448, 448}}},
                                     {{"type", "resize"}, {"size", {28, 28}}},
                                     {{"type", "normalize"}, {"scale", 1.0 / 255}}}},
                                   {"take", 160},
                                   {"batch", 16},
                                   {"parallelism", 1}};
  const auto report = train(pipeline, 10);
  const auto& v = report["train"]["verdict"];
  const std::string bound = v["input_bound"];
  EXPECT_TRUE(bound == "highly" || bound == "moderately") << v.dump(1);
  EXPECT_TRUE(mentions(v["advice"].get<std::vector<std::string>>(), "data.train.parallelism is 1: set it to \"auto\""))
      << v.dump(1);
  EXPECT_DOUBLE_EQ(v["input_wait_fraction"].get<double>(), report["train"]["input_wait_fraction"].get<double>())
      << "the verdict judges the input wait the trainer measured";
  EXPECT_EQ(v["breakdown"]["communication_s"], 0.0);
}

// A cheap, cached, parallel, prefetched pipeline (a copy and a scale per pixel) for a model that does hundreds of
// multiply-adds per pixel (784 -> 200, forward and backward): the input is ready whenever the trainer asks. Three
// epochs, so the wait for the very first batch (opening the source) is not most of a one-second run's input wait
// on a loaded machine.
TEST_F(VerdictRun, AComputeDominatedRunIsNotInputBound) {
  const nlohmann::json pipeline = {{"map", {{{"type", "normalize"}, {"scale", 1.0 / 255}}}},
                                   {"take", 1000},
                                   {"batch", 50},
                                   {"cache", "memory"}};
  const auto report = train(pipeline, 200, 3);
  const auto& v = report["train"]["verdict"];
  EXPECT_EQ(v["input_bound"], "not") << v.dump(1);
  EXPECT_TRUE(v["advice"].empty()) << v.dump(1);
  const auto& b = v["breakdown"];
  EXPECT_GT(b["compute_s"].get<double>(), 10 * b["input_wait_s"].get<double>()) << v.dump(1);
}
