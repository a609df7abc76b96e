// The core's source -> map -> batch loop: batch sizes, remainders, epochs, and deterministic per-element seeds.
#include "ramjet/plan/plan.hpp"
#include "ramjet/data/batch.hpp"
#include "ramjet/plugin/failure.hpp"
#include "ramjet/data/input_pipeline.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

using namespace ramjet::core;
using namespace ramjet::test;

namespace {

class InputPipelineTest : public ::testing::Test {
 protected:
  PluginRegistry registry{DiscoveryOptions{{stock_plugin_dir()}, {}, {}}};
  TempDir dir;

  nlohmann::json spec(int count, int batch) {
    return {{"source",
             {{"type", "synthetic"},
              {"count", count},
              {"tensors", {{"image", {{"shape", {2, 3, 1}}, {"dtype", "float32"}}}}}}},
            {"batch", batch}};
  }
  Plan manifest(const nlohmann::json& train, uint64_t seed = 1) {
    nlohmann::json doc = {{"seed", seed}, {"data", {{"train", train}}}};
    write_file(dir / "p.json", doc.dump());
    return require_plan(load_pipeline_manifest(dir / "p.json"), registry);
  }
  std::vector<int64_t> batch_sizes(const nlohmann::json& train) {
    auto m = manifest(train);
    InputPipeline p(*m.train_data, registry, 1);
    std::vector<int64_t> sizes;
    while (auto b = p.next_batch()) sizes.push_back(b->find("image")->shape[0]);
    return sizes;
  }
  std::vector<float> all_values(const nlohmann::json& train, uint64_t seed) {
    auto m = manifest(train, seed);
    InputPipeline p(*m.train_data, registry, seed);
    std::vector<float> values;
    while (auto b = p.next_batch()) {
      const DLTensor* t = b->find("image");
      const float* v = static_cast<const float*>(t->data);
      values.insert(values.end(), v, v + element_count(*t));
    }
    return values;
  }
};

}  // namespace

TEST_F(InputPipelineTest, LastPartialBatchIsKeptOrDropped) {
  EXPECT_EQ(batch_sizes(spec(10, 4)), (std::vector<int64_t>{4, 4, 2}));
  auto dropping = spec(10, 4);
  dropping["drop_remainder"] = true;
  EXPECT_EQ(batch_sizes(dropping), (std::vector<int64_t>{4, 4}));
}

TEST_F(InputPipelineTest, EpochsRepeatWithoutStraddlingAndTakeLimits) {
  auto two = spec(5, 2);
  two["epochs"] = 2;
  EXPECT_EQ(batch_sizes(two), (std::vector<int64_t>{2, 2, 1, 2, 2, 1}));
  auto taken = spec(100, 3);
  taken["take"] = 7;
  EXPECT_EQ(batch_sizes(taken), (std::vector<int64_t>{3, 3, 1}));
  EXPECT_TRUE(batch_sizes(spec(0, 3)).empty());
}

TEST_F(InputPipelineTest, AugmentIsAFunctionOfSeedEpochAndIndex) {
  auto flipping = spec(64, 8);
  flipping["augment"] = {{{"type", "random_flip"}, {"horizontal", true}, {"vertical", true}}};
  flipping["epochs"] = 2;
  auto first = all_values(flipping, 11);
  EXPECT_EQ(first, all_values(flipping, 11)) << "same seed, same output";
  EXPECT_NE(first, all_values(flipping, 12)) << "another seed, other flips";
  // Epoch 2 flips differently from epoch 1 (same source values, other seeds).
  const size_t half = first.size() / 2;
  EXPECT_NE(std::vector<float>(first.begin(), first.begin() + half), std::vector<float>(first.begin() + half, first.end()));
  auto plain = spec(64, 8);
  plain["epochs"] = 2;
  auto unflipped = all_values(plain, 11);
  EXPECT_EQ(std::vector<float>(unflipped.begin(), unflipped.begin() + half),
            std::vector<float>(unflipped.begin() + half, unflipped.end()));
}

TEST(Batch, MismatchedShapesNameTheElement) {
  std::vector<Example> items(2);
  items[0].set("x", make_tensor({kDLFloat, 32, 1}, std::vector<int64_t>{2}));
  items[1].set("x", make_tensor({kDLFloat, 32, 1}, std::vector<int64_t>{3}));
  try {
    stack_examples(items, 40);
    FAIL();
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("element 41: tensor 'x' has shape [3], earlier elements have [2]"),
              std::string::npos)
        << e.what();
  }
}

TEST(Batch, StacksAlongANewLeadingAxis) {
  std::vector<Example> items(3);
  for (int i = 0; i < 3; ++i) {
    items[i].set("x", make_tensor({kDLInt, 32, 1}, std::vector<int64_t>{2}));
    auto* v = static_cast<int32_t*>(items[i].find("x")->data);
    v[0] = i;
    v[1] = 10 * i;
  }
  Example b = stack_examples(items, 0);
  const DLTensor* x = b.find("x");
  ASSERT_EQ(x->ndim, 2);
  EXPECT_EQ(x->shape[0], 3);
  const auto* v = static_cast<const int32_t*>(x->data);
  EXPECT_EQ((std::vector<int32_t>(v, v + 6)), (std::vector<int32_t>{0, 0, 1, 10, 2, 20}));
}
