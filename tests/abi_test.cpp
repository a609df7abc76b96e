// The ABI seen from both sides: a pure-C plugin loads and runs; the C++ SDK turns every exception into a status
// and message; the host API keeps its ownership promises.
#include "ramjet/plan/plan.hpp"
#include "ramjet/plugin/components.hpp"
#include "ramjet/plugin/failure.hpp"
#include "ramjet/plugin/host_api.hpp"
#include "ramjet/data/input_pipeline.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

using namespace ramjet::core;
using namespace ramjet::test;

namespace {

PluginRegistry registry_in(std::vector<fs::path> dirs) { return PluginRegistry(DiscoveryOptions{dirs, {}, {}}); }

PipelineManifest manifest_in(const TempDir& dir, const nlohmann::json& doc) {
  write_file(dir / "pipeline.json", doc.dump());
  return load_pipeline_manifest(dir / "pipeline.json");
}

}  // namespace

TEST(PureCPlugin, LoadsAndRunsThroughTheCore) {
  TempDir dir;
  auto registry = registry_in({fixture_dir("c_plugin")});
  auto manifest = manifest_in(dir, {{"data",
                                     {{"train",
                                       {{"source", {{"type", "c_counter"}, {"count", 10}}},
                                        {"map", {{{"type", "c_scale"}, {"factor", 2.5}}}},
                                        {"batch", 4}}}}}});
  const Plan plan = require_plan(manifest, registry);
  InputPipeline pipeline(*plan.train_data, registry, 7);
  std::vector<float> seen;
  std::vector<int64_t> batch_sizes;
  while (auto batch = pipeline.next_batch()) {
    const DLTensor* v = batch->find("value");
    ASSERT_NE(v, nullptr);
    batch_sizes.push_back(v->shape[0]);
    for (int64_t i = 0; i < v->shape[0]; ++i) seen.push_back(static_cast<const float*>(v->data)[i]);
  }
  EXPECT_EQ(batch_sizes, (std::vector<int64_t>{4, 4, 2}));
  ASSERT_EQ(seen.size(), 10u);
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_FLOAT_EQ(seen[i], 2.5f * static_cast<float>(i));
}

TEST(PureCPlugin, NeedsNoCxxRuntime) {
  auto r = run("readelf -d " + quote(fixture_library("c_plugin").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("libc.so"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("libstdc++"), std::string::npos) << "the C plugin links the C++ runtime:\n" << r.output;
}

TEST(PureCPlugin, ItsErrorsCarryItsMessage) {
  auto registry = registry_in({fixture_dir("c_plugin")});
  CreateArgs args;
  args.config = {{"count", -3}};
  args.where = "test#/source";
  try {
    DataSource source(registry.component(RAMJET_KIND_DATA_SOURCE, "c_counter"), args);
    FAIL() << "a negative count must be refused";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("count must be >= 0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("test#/source"), std::string::npos) << e.what();
  }
}

class SdkBoundary : public ::testing::Test {
 protected:
  PluginRegistry registry = registry_in({fixture_dir("throws")});
  std::string apply_error(const std::string& name) {
    Transform t(registry.component(RAMJET_KIND_TRANSFORM, name), CreateArgs{});
    Example ex;
    try {
      t.apply(ex, 0);
    } catch (const RuntimeFailure& e) {
      return e.what();
    }
    return "no error";
  }
};

TEST_F(SdkBoundary, StdExceptionBecomesInternalErrorWithItsMessage) {
  EXPECT_NE(apply_error("throws_runtime").find("boom from std::runtime_error"), std::string::npos);
}

TEST_F(SdkBoundary, NonStandardExceptionIsCaughtToo) {
  EXPECT_NE(apply_error("throws_int").find("unknown exception"), std::string::npos);
}

TEST_F(SdkBoundary, ConfigErrorsNameTheManifestPlace) {
  CreateArgs args;
  args.where = "pipeline.json#/data/train/map/0";
  args.config = {{"required_number", "not a number"}};
  try {
    Transform t(registry.component(RAMJET_KIND_TRANSFORM, "rejects_config"), args);
    FAIL() << "the config must be refused";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("pipeline.json#/data/train/map/0/required_number"), std::string::npos)
        << e.what();
  }
}

TEST(HostApi, ExampleSetTakesOwnershipEvenOnFailure) {
  const ramjet_host_api* api = host_api();
  static int deleted = 0;
  deleted = 0;
  auto* t = api->tensor_new({kDLFloat, 32, 1}, 0, nullptr);
  ASSERT_NE(t, nullptr);
  auto original = t->deleter;
  static void (*chained)(DLManagedTensor*) = nullptr;
  chained = original;
  t->deleter = [](DLManagedTensor* self) {
    ++deleted;
    chained(self);
  };
  EXPECT_EQ(api->example_set(nullptr, "x", t), RAMJET_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(deleted, 1);
}

TEST(HostApi, TensorsAreZeroedAlignedAndShaped) {
  const ramjet_host_api* api = host_api();
  const int64_t shape[] = {3, 5};
  TensorPtr t(api->tensor_new({kDLUInt, 8, 1}, 2, shape));
  ASSERT_TRUE(t);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->dl_tensor.data) % 64, 0u);
  EXPECT_EQ(t->dl_tensor.ndim, 2);
  EXPECT_EQ(t->dl_tensor.shape[1], 5);
  const auto* bytes = static_cast<const uint8_t*>(t->dl_tensor.data);
  for (int i = 0; i < 15; ++i) EXPECT_EQ(bytes[i], 0);
  const int64_t negative[] = {-1};
  EXPECT_EQ(api->tensor_new({kDLUInt, 8, 1}, 1, negative), nullptr);
}

TEST(HostApi, ExampleKeepsNamesInOrderAndReplacesByName) {
  const ramjet_host_api* api = host_api();
  Example ex;
  ASSERT_EQ(api->example_set(&ex, "b", api->tensor_new({kDLFloat, 32, 1}, 0, nullptr)), RAMJET_OK);
  ASSERT_EQ(api->example_set(&ex, "a", api->tensor_new({kDLFloat, 32, 1}, 0, nullptr)), RAMJET_OK);
  ASSERT_EQ(api->example_set(&ex, "b", api->tensor_new({kDLInt, 32, 1}, 0, nullptr)), RAMJET_OK);
  ASSERT_EQ(api->example_size(&ex), 2u);
  EXPECT_STREQ(api->example_name(&ex, 0), "b");
  EXPECT_EQ(api->example_find(&ex, "b")->dtype.code, kDLInt);
  EXPECT_EQ(api->example_name(&ex, 2), nullptr);
  EXPECT_EQ(api->example_remove(&ex, "a"), RAMJET_OK);
  EXPECT_EQ(api->example_remove(&ex, "a"), RAMJET_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(api->example_size(&ex), 1u);
}
