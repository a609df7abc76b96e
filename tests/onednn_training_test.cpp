// The oneDNN "cpu" backend trains: a small CNN learns a separable problem, a smaller last batch computes what the
// full batch does, and the MNIST-shaped CNN's loss falls. How fast a step runs is measured in bench/train/cnn_step.cpp.
#include "ramjet/plugin/example.hpp"
#include "onednn_harness.hpp"
#include "onednn_models.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <vector>

using namespace ramjet::core;
using namespace ramjet::test::cpu_backend;

TEST(OnednnTraining, SmallCnnLearnsASeparableProblemAndTakesASmallerLastBatch) {
  Harness h(kDefaultThreads);
  const json g = small_cnn();
  ASSERT_TRUE(h.compile(g, adam_options(32)).ok());
  Example params = random_params(g, 3, 0.3f);
  ASSERT_TRUE(h.set_state("parameters", params).ok());
  std::mt19937 rng(21);
  expect_loss_fell(train_separable(h, 50, 32, 0.01f, rng));

  // The last batch of an epoch: 10 examples on a program compiled for 32.
  Example small = separable_batch(10, {8, 8, 1}, rng), out;
  const Status f = h.forward(small, out, true, 99);
  ASSERT_TRUE(f.ok()) << f.message;
  const DLTensor* fc = out.find("fc");
  ASSERT_NE(fc, nullptr);
  EXPECT_EQ(fc->shape[0], 10);
  EXPECT_TRUE(std::isfinite(scalar(out, "loss")));
  const DLTensor* correct = out.find("correct");
  ASSERT_NE(correct, nullptr);
  EXPECT_EQ(correct->dtype.code, kDLInt);
  EXPECT_GE(*static_cast<const int32_t*>(correct->data), 8);  // it learned the problem
  ASSERT_TRUE(h.backward().ok());
  ASSERT_TRUE(h.update(51, 0.01f).ok());
}

TEST(OnednnTraining, ASmallerBatchComputesWhatTheFullBatchDoes) {
  Harness h;
  const json g = small_cnn();
  ASSERT_TRUE(h.compile(g, adam_options(16)).ok());
  Example params = random_params(g, 4, 0.3f);
  ASSERT_TRUE(h.set_state("parameters", params).ok());
  std::mt19937 rng(22);
  Example full = separable_batch(16, {8, 8, 1}, rng), out_full, part, out_part;
  const auto x = values(full, "x");
  put(part, "x", {5, 8, 8, 1}, std::vector<float>(x.begin(), x.begin() + 5 * 64));
  ASSERT_TRUE(h.forward(full, out_full, false).ok());
  ASSERT_TRUE(h.forward(part, out_part, false).ok());
  const auto a = values(out_full, "fc"), b = values(out_part, "fc");
  expect_near_all(b, std::vector<float>(a.begin(), a.begin() + 10), 1e-5, "fc of the first 5 examples");
  EXPECT_EQ(out_part.find("loss"), nullptr) << "no labels, no loss";
}

TEST(OnednnTraining, MnistShapedCnnLossFalls) {
  // The brief's model: conv 3x3x32 relu -> max_pool 2 -> flatten -> dense 128 relu -> dense 10, batch 128.
  json g = Ir()
               .input("x", {28, 28, 1})
               .conv("conv2d", "x", 1, {26, 26, 32}, {{"filters", 32}, {"kernel", {3, 3}}, {"activation", "relu"}})
               .node("max_pool2d", "max_pool", {"conv2d"}, {13, 13, 32},
                     {{"pool", {2, 2}}, {"strides", {2, 2}}, {"padding", {0, 0, 0, 0}}})
               .node("flatten", "flatten", {"max_pool2d"}, {5408})
               .dense("dense", "flatten", 5408, 128, "relu")
               .dense("dense_1", "dense", 128, 10)
               .classifier("dense_1");
  Harness h(kDefaultThreads);
  ASSERT_TRUE(h.compile(g, adam_options(128)).ok());
  Example params = random_params(g, 5, 0.05f);
  ASSERT_TRUE(h.set_state("parameters", params).ok());
  std::mt19937 rng(23);
  std::vector<Example> batches;
  for (int i = 0; i < 4; ++i) batches.push_back(separable_batch(128, {28, 28, 1}, rng));
  std::vector<float> losses;
  for (int step = 1; step <= 24; ++step) {
    Example out;
    ASSERT_TRUE(h.forward(batches[step % 4], out, true, static_cast<uint64_t>(step)).ok());
    ASSERT_TRUE(h.backward().ok());
    ASSERT_TRUE(h.update(step, 0.001f).ok());
    losses.push_back(scalar(out, "loss"));
  }
  EXPECT_LT(losses.back(), 0.5 * losses.front()) << "loss went from " << losses.front() << " to " << losses.back();
}

ramjet_status ignore_tap(void*, const char*, const DLTensor*, ramjet_error*) { return RAMJET_OK; }

// The plans of one program (the training batch, a smaller last batch, an evaluation batch) share their per-step
// buffers. Running the others between two training steps must change nothing the training step computes, and
// each plan must compute what a program that never ran the others does.
TEST(OnednnTraining, PlansSharingBuffersComputeWhatEachComputesAlone) {
  // A residual block with batch norm and max pooling: gradients with two contributions, workspaces, statistics.
  json g = Ir()
                     .input("x", {8, 8, 1})
                     .conv("stem", "x", 1, {8, 8, 4},
                           {{"filters", 4}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}, {"activation", "relu"}})
                     .conv("branch", "stem", 4, {8, 8, 4}, {{"filters", 4}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}})
                     .batch_norm("bn", "branch", {8, 8, 4})
                     .node("sum", "add", {"stem", "bn"}, {8, 8, 4})
                     .node("pool", "max_pool", {"sum"}, {4, 4, 4},
                           {{"pool", {2, 2}}, {"strides", {2, 2}}, {"padding", {0, 0, 0, 0}}})
                     .node("flat", "flatten", {"pool"}, {64})
                     .dense("fc", "flat", 64, 2)
                     .classifier("fc");
  // Momentum 1 keeps the moving statistics: every program below then sees the same parameters at every step.
  for (auto& node : g["nodes"])
    if (node["name"] == "bn") node["attrs"]["momentum"] = 1.0;
  auto params = [&] { return random_params(g, 9, 0.3f); };  // the same values on every call
  std::mt19937 rng(24);
  Example train = separable_batch(16, {8, 8, 1}, rng), small = separable_batch(5, {8, 8, 1}, rng),
          large = separable_batch(40, {8, 8, 1}, rng);
  auto gradients_of = [&](Harness& h) {
    Example out;
    EXPECT_TRUE(h.forward(train, out, true, 3).ok());
    EXPECT_TRUE(h.backward().ok());
    std::map<std::string, std::vector<float>> grads;
    Example state = h.state("gradients");
    for (const auto& entry : state.entries) grads[entry.name] = values(state, entry.name);
    return std::make_pair(values(out, "fc"), grads);
  };
  auto outputs_of = [](Harness& h, Example& batch, bool training) {
    Example out;
    EXPECT_TRUE(h.forward(batch, out, training, 5).ok());
    return values(out, "fc");
  };

  Harness alone;
  ASSERT_TRUE(alone.compile(g, adam_options(16)).ok());
  Example p1 = params();
  ASSERT_TRUE(alone.set_state("parameters", p1).ok());
  const auto [train_fc, train_grads] = gradients_of(alone);
  Harness small_alone, large_alone;
  for (Harness* h : {&small_alone, &large_alone}) {
    ASSERT_TRUE(h->compile(g, adam_options(16)).ok());
    Example p = params();
    ASSERT_TRUE(h->set_state("parameters", p).ok());
  }
  const auto small_fc = outputs_of(small_alone, small, true);
  // Tapping every value keeps each one's memory to itself: the inference plan without any reuse.
  json every = json::array();
  for (const auto& node : g["nodes"]) every.push_back(node["name"]);
  ASSERT_TRUE(large_alone.set_taps(every, &ignore_tap, nullptr).ok());
  const auto large_fc = outputs_of(large_alone, large, false);

  Harness shared;
  ASSERT_TRUE(shared.compile(g, adam_options(16)).ok());
  Example p2 = params();
  ASSERT_TRUE(shared.set_state("parameters", p2).ok());
  gradients_of(shared);  // the training plan's buffers hold a step's values when the others run
  EXPECT_EQ(outputs_of(shared, small, true), small_fc) << "the smaller last batch";
  EXPECT_EQ(outputs_of(shared, large, false), large_fc) << "the evaluation batch";
  const auto [again_fc, again_grads] = gradients_of(shared);
  EXPECT_EQ(again_fc, train_fc);
  ASSERT_EQ(again_grads.size(), train_grads.size());
  for (const auto& [name, grad] : train_grads) EXPECT_EQ(again_grads.at(name), grad) << name;
}
