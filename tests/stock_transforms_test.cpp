// normalize, random_flip and cast compute what they promise.
#include "ramjet/core/components.hpp"
#include "ramjet/core/failure.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

using namespace ramjet::core;
using namespace ramjet::test;

namespace {

class TransformTest : public ::testing::Test {
 protected:
  PluginRegistry registry{DiscoveryOptions{{stock_plugin_dir()}, {}, {}}};
  Transform make(const std::string& name, const nlohmann::json& config) {
    CreateArgs args;
    args.config = config;
    args.where = "t.json#/map/0";
    return Transform(registry.component(RAMJET_KIND_TRANSFORM, name), args);
  }
  template <class T>
  static Example image(std::vector<int64_t> shape, std::vector<T> values, DLDataType dtype) {
    Example e;
    e.set("image", make_tensor(dtype, shape));
    std::copy(values.begin(), values.end(), static_cast<T*>(e.find("image")->data));
    return e;
  }
  template <class T>
  static std::vector<T> values(Example& e) {
    const DLTensor* t = e.find("image");
    return std::vector<T>(static_cast<const T*>(t->data), static_cast<const T*>(t->data) + element_count(*t));
  }
};

}  // namespace

TEST_F(TransformTest, NormalizeScalesAndStandardisesPerChannel) {
  auto t = make("normalize", {{"scale", 0.5}, {"mean", {1.0, 2.0}}, {"std", {2.0, 4.0}}});
  auto e = image<uint8_t>({1, 2, 2}, {2, 4, 6, 8}, {kDLUInt, 8, 1});
  t.apply(e, 0);
  EXPECT_EQ(e.find("image")->dtype.code, kDLFloat);
  // channel 0: (x*0.5-1)/2; channel 1: (x*0.5-2)/4
  EXPECT_EQ(values<float>(e), (std::vector<float>{0.0f, 0.0f, 1.0f, 0.5f}));
}

TEST_F(TransformTest, NormalizeRefusesBadConfigAndChannelMismatch) {
  EXPECT_THROW(make("normalize", {{"std", 0}}), InvalidInput);
  EXPECT_THROW(make("normalize", {{"mean", "zero"}}), InvalidInput);
  auto t = make("normalize", {{"mean", {1, 2, 3}}});
  auto e = image<float>({1, 1, 2}, {1, 2}, {kDLFloat, 32, 1});
  EXPECT_THROW(t.apply(e, 0), InvalidInput);
}

TEST_F(TransformTest, FlipMirrorsRowsAndIsDeterministicPerSeed) {
  auto always = make("random_flip", {{"probability", 1.0}});
  auto e = image<uint8_t>({2, 3, 1}, {1, 2, 3, 4, 5, 6}, {kDLUInt, 8, 1});
  always.apply(e, 123);
  EXPECT_EQ(values<uint8_t>(e), (std::vector<uint8_t>{3, 2, 1, 6, 5, 4}));
  auto both = make("random_flip", {{"probability", 1.0}, {"vertical", true}});
  auto v = image<uint8_t>({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}, {kDLUInt, 8, 1});
  both.apply(v, 0);
  EXPECT_EQ(values<uint8_t>(v), (std::vector<uint8_t>{7, 8, 5, 6, 3, 4, 1, 2}));

  auto coin = make("random_flip", nlohmann::json::object());
  int flipped = 0;
  for (uint64_t seed = 0; seed < 400; ++seed) {
    auto a = image<uint8_t>({1, 2, 1}, {1, 2}, {kDLUInt, 8, 1});
    auto b = image<uint8_t>({1, 2, 1}, {1, 2}, {kDLUInt, 8, 1});
    coin.apply(a, seed);
    coin.apply(b, seed);
    EXPECT_EQ(values<uint8_t>(a), values<uint8_t>(b));
    flipped += values<uint8_t>(a)[0] == 2;
  }
  EXPECT_GT(flipped, 150);  // about half of 400 at p = 0.5; the bounds are > 5 sigma wide
  EXPECT_LT(flipped, 250);
}

TEST_F(TransformTest, CastRoundsAndSaturates) {
  auto t = make("cast", {{"dtype", "uint8"}});
  auto e = image<float>({4}, {-3.0f, 1.4f, 1.6f, 300.0f}, {kDLFloat, 32, 1});
  e.find("image")->ndim = 1;
  t.apply(e, 0);
  EXPECT_EQ(values<uint8_t>(e), (std::vector<uint8_t>{0, 1, 2, 255}));
  EXPECT_THROW(make("cast", {{"dtype", "float8"}}), InvalidInput);
  EXPECT_THROW(make("cast", nlohmann::json::object()), InvalidInput);
}
