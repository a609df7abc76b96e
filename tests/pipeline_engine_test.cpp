// The input pipeline engine: the same output at any parallelism, shards that cover everything once, exact
// resumption, caches that persist and invalidate, interleave order, skipping bad elements, autotuning limits.
#include "ramjet/plan/plan.hpp"
#include "ramjet/plugin/failure.hpp"
#include "ramjet/data/input_pipeline.hpp"
#include "ramjet/data/shuffle.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

using namespace ramjet::core;
using namespace ramjet::test;

namespace {

// One batch as plain data: every tensor's bytes, by name, for exact comparison.
using BatchBytes = std::vector<std::pair<std::string, std::string>>;

BatchBytes bytes_of(const Example& batch) {
  BatchBytes out;
  for (const auto& e : batch.entries) {
    const DLTensor& t = e.tensor->dl_tensor;
    out.emplace_back(e.name + shape_to_string(t), std::string(static_cast<const char*>(t.data), byte_size(t)));
  }
  return out;
}

std::vector<float> values_of(const Example& batch, const char* name = "value") {
  const DLTensor* t = batch.find(name);
  const auto* v = static_cast<const float*>(t->data);
  return std::vector<float>(v, v + element_count(*t));
}

class PipelineEngine : public ::testing::Test {
 protected:
  PluginRegistry registry{DiscoveryOptions{{stock_plugin_dir(), fixture_dir("c_plugin")}, {}, {}}};
  TempDir dir;
  uint64_t seed = 17;

  Plan manifest(const nlohmann::json& train) {
    nlohmann::json doc = {{"seed", seed}, {"data", {{"train", train}}}};
    write_file(dir / "p.json", doc.dump());
    return require_plan(load_pipeline_manifest(dir / "p.json"), registry);
  }
  std::unique_ptr<InputPipeline> open(const nlohmann::json& train) {
    auto m = manifest(train);
    return std::make_unique<InputPipeline>(*m.train_data, registry, seed);
  }
  std::vector<BatchBytes> all_batches(const nlohmann::json& train) {
    auto p = open(train);
    std::vector<BatchBytes> out;
    while (auto b = p->next_batch()) out.push_back(bytes_of(*b));
    return out;
  }
  std::vector<std::vector<float>> all_values(const nlohmann::json& train) {
    auto p = open(train);
    std::vector<std::vector<float>> out;
    while (auto b = p->next_batch()) out.push_back(values_of(*b));
    return out;
  }
  static nlohmann::json augmenting() {
    return {{"source",
             {{"type", "synthetic"},
              {"count", 300},
              {"tensors",
               {{"image", {{"shape", {6, 5, 2}}, {"dtype", "uint8"}, {"low", 0}, {"high", 256}}},
                {"label", {{"shape", nlohmann::json::array()}, {"dtype", "int32"}, {"low", 0}, {"high", 10}}}}}}},
            {"map", {{{"type", "normalize"}, {"scale", 1.0 / 255}}}},
            {"augment", {{{"type", "random_flip"}, {"vertical", true}}}},
            {"shuffle", 64},
            {"batch", 32},
            {"epochs", 2}};
  }
  static nlohmann::json counter(int count, int batch) {
    return {{"source", {{"type", "c_counter"}, {"count", count}}}, {"batch", batch}};
  }
  static nlohmann::json stream(int count, int batch) {
    return {{"source", {{"type", "c_stream"}, {"count", count}}}, {"batch", batch}};
  }
  static std::multiset<float> flatten(const std::vector<std::vector<float>>& batches) {
    std::multiset<float> all;
    for (const auto& b : batches) all.insert(b.begin(), b.end());
    return all;
  }
};

}  // namespace

TEST_F(PipelineEngine, OutputIsIdenticalAtAnyParallelism) {
  auto serial = augmenting();
  serial["parallelism"] = 1;
  serial["prefetch"] = 0;
  const auto expected = all_batches(serial);
  ASSERT_EQ(expected.size(), 20u);  // 300 = 9×32 + 12, two epochs
  for (auto [parallelism, prefetch] : {std::pair<nlohmann::json, nlohmann::json>{2, 0}, {2, 3}, {1, 2}, {"auto", "auto"}}) {
    auto spec = augmenting();
    spec["parallelism"] = parallelism;
    spec["prefetch"] = prefetch;
    EXPECT_EQ(all_batches(spec), expected) << "parallelism " << parallelism << ", prefetch " << prefetch;
  }
}

TEST_F(PipelineEngine, SequentialSourcesAreDeterministicToo) {
  auto spec = stream(100, 8);
  spec["shuffle"] = 20;
  spec["epochs"] = 2;
  spec["parallelism"] = 1;
  spec["prefetch"] = 0;
  const auto expected = all_values(spec);
  spec["parallelism"] = 2;
  spec["prefetch"] = 2;
  EXPECT_EQ(all_values(spec), expected);
  // Shuffled, but every element once per epoch.
  EXPECT_NE(expected.front(), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(flatten(expected).count(42.0f), 2u);
}

TEST_F(PipelineEngine, ShufflingDiffersPerEpochAndIsAPermutation) {
  auto spec = counter(50, 50);
  spec["shuffle"] = 50;
  spec["epochs"] = 2;
  auto epochs = all_values(spec);
  ASSERT_EQ(epochs.size(), 2u);
  EXPECT_NE(epochs[0], epochs[1]);
  for (auto e : epochs) {
    std::sort(e.begin(), e.end());
    std::vector<float> all(50);
    std::iota(all.begin(), all.end(), 0.0f);
    EXPECT_EQ(e, all);
  }
}

TEST_F(PipelineEngine, ShardsCoverEveryElementExactlyOnce) {
  for (const auto& base : {counter(103, 7), stream(103, 7)}) {
    std::multiset<float> seen;
    for (int index = 0; index < 3; ++index) {
      auto spec = base;
      spec["shard"] = {{"count", 3}, {"index", index}};
      spec["shuffle"] = 16;
      auto mine = flatten(all_values(spec));
      EXPECT_NEAR(static_cast<double>(mine.size()), 103.0 / 3, 1.0);
      seen.insert(mine.begin(), mine.end());
    }
    ASSERT_EQ(seen.size(), 103u);
    for (int i = 0; i < 103; ++i) EXPECT_EQ(seen.count(static_cast<float>(i)), 1u) << i;
  }
}

// Data-parallel training needs every rank to see the same number of elements, for random-access sources and for
// streams whose length nobody knows in advance: the last partial round is dropped, and nothing else.
TEST_F(PipelineEngine, EvenShardsAreEqualAndDisjoint) {
  for (const auto& base : {counter(103, 7), stream(103, 7)}) {
    std::multiset<float> seen;
    for (int index = 0; index < 3; ++index) {
      Plan plan = manifest(base);
      PipelineSpec spec = *plan.train_data;
      spec.shard_count = 3;
      spec.shard_index = index;
      spec.even_shards = true;
      InputPipeline p(spec, registry, seed);
      EXPECT_EQ(p.elements_per_epoch(), base["source"]["type"] == "c_counter" ? 34 : -1);
      std::vector<float> mine;
      while (auto b = p.next_batch()) for (float v : values_of(*b)) mine.push_back(v);
      EXPECT_EQ(mine.size(), 34u) << base["source"]["type"] << " shard " << index;
      seen.insert(mine.begin(), mine.end());
    }
    ASSERT_EQ(seen.size(), 102u);
    for (int i = 0; i < 102; ++i) EXPECT_EQ(seen.count(static_cast<float>(i)), 1u) << i;
  }
}

TEST_F(PipelineEngine, RestoringAfterKBatchesYieldsExactlyTheRest) {
  auto ra = augmenting();
  auto seq = stream(90, 8);
  seq["shuffle"] = 25;
  seq["epochs"] = 2;
  seq["map"] = {{{"type", "c_scale"}, {"factor", 2}}};
  for (const auto& spec : {ra, seq}) {
    auto whole = all_batches(spec);
    std::vector<PipelineState> states;
    {
      auto p = open(spec);
      while (p->next_batch()) states.push_back(p->state());
    }
    ASSERT_EQ(states.size(), whole.size());
    for (size_t k : {size_t{0}, size_t{1}, size_t{5}, whole.size() / 2 + 1, whole.size() - 1}) {
      auto p = open(spec);
      if (k > 0) p->restore(states[k - 1]);
      std::vector<BatchBytes> rest;
      while (auto b = p->next_batch()) rest.push_back(bytes_of(*b));
      EXPECT_EQ(rest, std::vector<BatchBytes>(whole.begin() + static_cast<std::ptrdiff_t>(k), whole.end()))
          << "resumed after " << k << " batches of " << spec["source"]["type"];
    }
  }
}

TEST_F(PipelineEngine, MemoryCacheGivesTheSameOutput) {
  auto plain = augmenting();
  auto cached = augmenting();
  cached["cache"] = "memory";
  auto p = open(cached);
  std::vector<BatchBytes> out;
  while (auto b = p->next_batch()) out.push_back(bytes_of(*b));
  EXPECT_EQ(out, all_batches(plain));
  EXPECT_TRUE(p->report()["cache"]["complete"].get<bool>());
  EXPECT_EQ(p->report()["cache"]["elements"], 300);
}

TEST_F(PipelineEngine, SequentialSourceReadsLaterEpochsFromTheCache) {
  auto spec = stream(40, 6);
  spec["map"] = {{{"type", "c_scale"}, {"factor", 3}}};
  spec["cache"] = "memory";
  spec["shuffle"] = 10;
  spec["epochs"] = 3;
  auto p = open(spec);
  std::vector<std::vector<float>> out;
  while (auto b = p->next_batch()) out.push_back(values_of(*b));
  EXPECT_TRUE(p->report()["cache"]["complete"].get<bool>());
  auto uncached = spec;
  uncached.erase("cache");
  EXPECT_EQ(out, all_values(uncached));
}

TEST_F(PipelineEngine, FileCachePersistsAcrossRunsAndInvalidatesWhenUpstreamChanges) {
  auto spec = augmenting();
  spec["cache"] = "cache/train.rjcache";
  const auto expected = all_batches(augmenting());
  {
    auto p = open(spec);
    std::vector<BatchBytes> out;
    while (auto b = p->next_batch()) out.push_back(bytes_of(*b));
    EXPECT_EQ(out, expected);
    EXPECT_FALSE(p->report()["cache"]["reused"].get<bool>());
  }
  ASSERT_TRUE(fs::exists(dir / "cache/train.rjcache"));
  {
    auto p = open(spec);
    std::vector<BatchBytes> out;
    while (auto b = p->next_batch()) out.push_back(bytes_of(*b));
    EXPECT_EQ(out, expected);
    EXPECT_TRUE(p->report()["cache"]["reused"].get<bool>()) << "the second run must read the cache file";
  }
  auto changed = spec;
  changed["map"][0]["scale"] = 1.0 / 128;
  auto p = open(changed);
  EXPECT_FALSE(p->report()["cache"]["complete"].get<bool>()) << "a changed map must invalidate the cache";
  std::vector<BatchBytes> out;
  while (auto b = p->next_batch()) out.push_back(bytes_of(*b));
  EXPECT_NE(out, expected);
}

// A source that names its files by a pattern: a file that newly matches (or a matched one that changes) makes the
// cache stale, so the next run reads the files again instead of serving the old elements.
TEST_F(PipelineEngine, FileCacheInvalidatesWhenAPatternMatchesOtherFiles) {
  for (const char* f : {"1", "2"}) write_file(dir / "files" / f, "");
  const nlohmann::json spec = {{"source", {{"type", "c_stream"}, {"count", 2}, {"files", "files/*"}}},
                               {"interleave", {{"cycle_length", 2}}},
                               {"cache", "train.rjcache"},
                               {"batch", 100}};
  EXPECT_EQ(flatten(all_values(spec)), (std::multiset<float>{1000, 1001, 2000, 2001}));
  EXPECT_TRUE(open(spec)->report()["cache"]["reused"].get<bool>()) << "nothing changed: the cache serves";
  write_file(dir / "files" / "3", "");
  auto p = open(spec);
  EXPECT_FALSE(p->report()["cache"]["reused"].get<bool>()) << "files/3 now matches files/*";
  std::vector<std::vector<float>> batches;
  while (auto b = p->next_batch()) batches.push_back(values_of(*b));
  EXPECT_EQ(flatten(batches), (std::multiset<float>{1000, 1001, 2000, 2001, 3000, 3001}));
}

TEST_F(PipelineEngine, CorruptCacheFileIsRebuiltNotTrusted) {
  auto spec = augmenting();
  spec["cache"] = "train.rjcache";
  write_file(dir / "train.rjcache", "RJCACHE1 but nothing else that makes sense");
  const auto expected = all_batches(augmenting());
  EXPECT_EQ(all_batches(spec), expected);
}

TEST_F(PipelineEngine, InterleaveTakesBlocksRoundRobinAcrossFiles) {
  for (const char* f : {"1", "2", "3"}) write_file(dir / "files" / f, "");
  for (bool parallel : {false, true}) {
    nlohmann::json spec = {{"source", {{"type", "c_stream"}, {"count", 3}, {"files", "files/*"}}},
                           {"interleave", {{"cycle_length", 2}, {"block_length", 2}, {"parallel", parallel}}},
                           {"batch", 9}};
    auto batches = all_values(spec);
    ASSERT_EQ(batches.size(), 1u);
    EXPECT_EQ(batches[0], (std::vector<float>{1000, 1001, 2000, 2001, 1002, 2002, 3000, 3001, 3002}))
        << "parallel reads: " << parallel;
  }
}

TEST_F(PipelineEngine, InterleaveShardsWholeFiles) {
  for (const char* f : {"1", "2", "3", "4"}) write_file(dir / "files" / f, "");
  std::multiset<float> seen;
  for (int index = 0; index < 2; ++index) {
    nlohmann::json spec = {{"source", {{"type", "c_stream"}, {"count", 2}, {"files", "files/*"}}},
                           {"interleave", {{"cycle_length", 2}}},
                           {"shard", {{"count", 2}, {"index", index}}},
                           {"batch", 100}};
    auto mine = flatten(all_values(spec));
    EXPECT_EQ(mine.size(), 4u);
    seen.insert(mine.begin(), mine.end());
  }
  EXPECT_EQ(seen, (std::multiset<float>{1000, 1001, 2000, 2001, 3000, 3001, 4000, 4001}));
}

TEST_F(PipelineEngine, BadElementsFailInOrderOrAreSkippedAndCounted) {
  std::string images{'\0', '\0', '\x08', '\x02', '\0', '\0', '\0', '\x05', '\0', '\0', '\0', '\x02'};
  images += "aabbccddee";
  std::string labels{'\0', '\0', '\x08', '\x01', '\0', '\0', '\0', '\x05', 1, 9, 2, 9, 3};
  write_file(dir / "images.idx", images);
  write_file(dir / "labels.idx", labels);
  nlohmann::json spec = {
      {"source", {{"type", "idx"}, {"images", "images.idx"}, {"labels", "labels.idx"}, {"num_classes", 5}}},
      {"batch", 2}};
  try {
    all_batches(spec);
    FAIL() << "label 9 must stop the run";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("label 9 of element 1"), std::string::npos) << e.what();
  }
  spec["on_error"] = "skip";
  spec["parallelism"] = 2;
  auto p = open(spec);
  int64_t elements = 0;
  while (auto b = p->next_batch()) elements += b->find("label")->shape[0];
  EXPECT_EQ(elements, 3);
  EXPECT_EQ(p->report()["skipped"], 2);
}

TEST_F(PipelineEngine, NonDeterministicModeKeepsEachEpochsElements) {
  auto spec = counter(200, 16);
  spec["shuffle"] = 200;
  spec["epochs"] = 2;
  spec["deterministic"] = false;
  spec["parallelism"] = 2;
  auto batches = all_values(spec);
  std::multiset<float> first, second;
  size_t seen = 0;
  for (const auto& b : batches) {
    for (float v : b) (seen++ < 200 ? first : second).insert(v);
  }
  ASSERT_EQ(first.size(), 200u);
  for (int i = 0; i < 200; ++i) {
    EXPECT_EQ(first.count(static_cast<float>(i)), 1u);
    EXPECT_EQ(second.count(static_cast<float>(i)), 1u);
  }
}

TEST_F(PipelineEngine, AutotuneStaysWithinTheCpuBudgetAndReportsItsChoices) {
  auto spec = augmenting();
  spec["parallelism"] = "auto";
  spec["budget"] = {{"cpu", 1}};
  auto p = open(spec);
  while (p->next_batch()) {
  }
  auto r = p->report();
  EXPECT_EQ(r["parallelism"], 1);
  EXPECT_EQ(r["autotune"]["limits"]["parallelism"], 1);
  EXPECT_TRUE(r["autotune"]["tuned"]["parallelism"].get<bool>());
  EXPECT_TRUE(r["autotune"].contains("decisions"));
}

TEST(Shuffle, BufferOfOneKeepsOrderAndLargeBufferPermutes) {
  std::vector<int64_t> items(100);
  std::iota(items.begin(), items.end(), 0);
  EXPECT_EQ(shuffled(items, 1, 5), items);
  auto all = shuffled(items, 1000, 5);
  EXPECT_NE(all, items);
  EXPECT_EQ(all, shuffled(items, 1000, 5));
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, items);
  // A small buffer only moves elements a bounded distance early.
  auto local = shuffled(items, 4, 9);
  for (size_t i = 0; i < local.size(); ++i) EXPECT_LE(local[i], static_cast<int64_t>(i) + 3);
}
