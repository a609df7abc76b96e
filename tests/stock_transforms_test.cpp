// normalize, random_flip, cast, random_crop, random_brightness, random_contrast, resize and one_hot compute what
// they promise, on tiny hand-checked inputs.
#include "ramjet/plugin/components.hpp"
#include "ramjet/plugin/failure.hpp"
#include "test_support.hpp"
#include "transform_fixture.hpp"

#include <gtest/gtest.h>
#include <ramjet/sdk.hpp>  // SeededRandom: the draws a transform makes for a seed

#include <cmath>
#include <set>

using namespace ramjet::core;
using namespace ramjet::test;

namespace {

class TransformTest : public TransformFixture {
 protected:
  template <class T>
  static Example label(T value, DLDataType dtype) {
    Example e;
    e.set("label", make_tensor(dtype, std::span<const int64_t>()));
    *static_cast<T*>(e.find("label")->data) = value;
    return e;
  }
};

constexpr DLDataType kU8{kDLUInt, 8, 1};
constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kI32{kDLInt, 32, 1};

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

// ---- random_crop --------------------------------------------------------------------------------------------

TEST_F(TransformTest, RandomCropPadsWithZerosAndCutsTheSeededWindow) {
  auto t = make("random_crop", {{"size", {3, 3}}, {"padding", 2}});
  const std::vector<uint8_t> pixels{1, 2, 3, 4, 5, 6, 7, 8, 9};  // a 3x3 image; padded it is 7x7
  std::set<std::pair<int64_t, int64_t>> offsets_seen;
  bool saw_corner = false;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    auto e = image<uint8_t>({3, 3, 1}, pixels, kU8);
    t.apply(e, seed);
    ASSERT_EQ(shape(e), (std::vector<int64_t>{3, 3, 1}));
    ASSERT_EQ(e.find("image")->dtype.code, kDLUInt);
    // The window the seed chooses: top then left, uniform over the 5 valid offsets of each axis.
    ramjet::SeededRandom rng(seed);
    const int64_t top = rng.integer(0, 5) - 2, left = rng.integer(0, 5) - 2;
    offsets_seen.insert({top, left});
    std::vector<uint8_t> expected;
    for (int64_t y = top; y < top + 3; ++y)
      for (int64_t x = left; x < left + 3; ++x)
        expected.push_back(y >= 0 && y < 3 && x >= 0 && x < 3 ? pixels[static_cast<size_t>(y * 3 + x)] : 0);
    ASSERT_EQ(values<uint8_t>(e), expected) << "seed " << seed;
    if (top == -2 && left == -2) {  // the top-left corner of the padded image, checked by hand
      EXPECT_EQ(values<uint8_t>(e), (std::vector<uint8_t>{0, 0, 0, 0, 0, 0, 0, 0, 1}));
      saw_corner = true;
    }
  }
  EXPECT_EQ(offsets_seen.size(), 25u);  // every valid offset occurs
  EXPECT_TRUE(saw_corner);
}

TEST_F(TransformTest, RandomCropKeepsDtypeAndChannelsAndChecksSizes) {
  auto t = make("random_crop", {{"size", 2}});
  std::vector<float> pixels(4 * 4 * 2);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<float>(i);
  auto e = image<float>({4, 4, 2}, pixels, kF32);
  t.apply(e, 11);
  EXPECT_EQ(shape(e), (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(e.find("image")->dtype.code, kDLFloat);
  ramjet::SeededRandom rng(11);
  const int64_t top = rng.integer(0, 3), left = rng.integer(0, 3);
  const auto v = values<float>(e);
  for (int64_t y = 0; y < 2; ++y)
    for (int64_t x = 0; x < 2; ++x)
      for (int64_t c = 0; c < 2; ++c)
        EXPECT_EQ(v[static_cast<size_t>((y * 2 + x) * 2 + c)], static_cast<float>(((top + y) * 4 + left + x) * 2 + c));

  auto too_big = make("random_crop", {{"size", {5, 5}}});
  auto small = image<uint8_t>({4, 4, 1}, std::vector<uint8_t>(16, 1), kU8);
  expect_invalid([&] { too_big.apply(small, 0); }, {"cannot cut 5x5", "4x4 padded by 0"});
  expect_invalid([&] { make("random_crop", {{"size", "big"}}); }, {"t.json#/map/0/size"});
  expect_invalid([&] { make("random_crop", nlohmann::json::object()); }, {"t.json#/map/0/size", "missing"});
  expect_invalid([&] { make("random_crop", {{"size", 2}, {"padding", -1}}); }, {"t.json#/map/0/padding"});
}

// ---- random_brightness and random_contrast ------------------------------------------------------------------

TEST_F(TransformTest, RandomBrightnessAddsOneDeltaWithinBounds) {
  auto t = make("random_brightness", {{"max_delta", 0.5}});
  const std::vector<float> pixels{0.0f, 0.25f, 0.5f, 1.0f};
  double lowest = 1, highest = -1;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    auto e = image<float>({2, 2, 1}, pixels, kF32);
    t.apply(e, seed);
    const auto v = values<float>(e);
    const float delta = v[0] - pixels[0];
    ASSERT_LE(std::abs(delta), 0.5f);
    for (size_t i = 0; i < v.size(); ++i) ASSERT_NEAR(v[i] - pixels[i], delta, 1e-6) << "one delta for every value";
    lowest = std::min<double>(lowest, delta);
    highest = std::max<double>(highest, delta);
  }
  EXPECT_LT(lowest, -0.4);  // draws span the whole interval
  EXPECT_GT(highest, 0.4);

  auto u8 = image<uint8_t>({1, 1, 1}, {3}, kU8);
  expect_invalid([&] { t.apply(u8, 0); }, {"random_brightness", "uint8", "float32"});
  expect_invalid([&] { make("random_brightness", {{"max_delta", -1}}); }, {"t.json#/map/0/max_delta"});
  expect_invalid([&] { make("random_brightness", nlohmann::json::object()); }, {"t.json#/map/0/max_delta"});
}

TEST_F(TransformTest, RandomContrastScalesAroundEachChannelMean) {
  // Channel 0 holds {1, 3} (mean 2), channel 1 holds {10, 30} (mean 20).
  auto fixed = make("random_contrast", {{"lower", 2.0}, {"upper", 2.0}});
  auto e = image<float>({2, 1, 2}, {1, 10, 3, 30}, kF32);
  fixed.apply(e, 5);
  EXPECT_EQ(values<float>(e), (std::vector<float>{0, 0, 4, 40}));

  // Factor 0 leaves every value at its channel's mean: 3 channels over 9 pixels, values c * 100 + pixel.
  auto flatten = make("random_contrast", {{"lower", 0.0}, {"upper", 0.0}});
  std::vector<float> pixels;
  for (int p = 0; p < 9; ++p)
    for (int c = 0; c < 3; ++c) pixels.push_back(static_cast<float>(c * 100 + p));
  auto m = image<float>({3, 3, 3}, pixels, kF32);
  flatten.apply(m, 0);
  const auto means = values<float>(m);
  for (size_t i = 0; i < means.size(); ++i) EXPECT_FLOAT_EQ(means[i], static_cast<float>((i % 3) * 100 + 4)) << i;

  auto t = make("random_contrast", {{"lower", 0.5}, {"upper", 1.5}});
  double lowest = 2, highest = 0;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    auto x = image<float>({2, 1, 2}, {1, 10, 3, 30}, kF32);
    t.apply(x, seed);
    const auto v = values<float>(x);
    const float factor = v[2] - 2.0f;  // 3 -> 2 + (3 - 2) * factor
    ASSERT_GE(factor, 0.5f - 1e-6f);
    ASSERT_LE(factor, 1.5f + 1e-6f);
    EXPECT_NEAR(v[0], 2.0f - factor, 1e-5);
    EXPECT_NEAR(v[1], 20.0f - 10.0f * factor, 1e-4);  // the same factor for every channel
    EXPECT_NEAR(v[3], 20.0f + 10.0f * factor, 1e-4);
    lowest = std::min<double>(lowest, factor);
    highest = std::max<double>(highest, factor);
  }
  EXPECT_LT(lowest, 0.6);
  EXPECT_GT(highest, 1.4);

  auto u8 = image<uint8_t>({1, 1, 1}, {3}, kU8);
  expect_invalid([&] { t.apply(u8, 0); }, {"random_contrast", "float32"});
  expect_invalid([&] { make("random_contrast", {{"lower", 1.5}, {"upper", 0.5}}); }, {"t.json#/map/0/upper"});
  expect_invalid([&] { make("random_contrast", {{"lower", -1}, {"upper", 0.5}}); }, {"t.json#/map/0/lower"});
}

TEST_F(TransformTest, RandomTransformsAreAPureFunctionOfTheSeed) {
  std::vector<float> pixels(6 * 6 * 3);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<float>((i * 37) % 101) / 100.0f;
  const std::vector<std::pair<std::string, nlohmann::json>> transforms{
      {"random_crop", {{"size", {4, 4}}, {"padding", 1}}},
      {"random_brightness", {{"max_delta", 0.3}}},
      {"random_contrast", {{"lower", 0.2}, {"upper", 1.8}}}};
  for (const auto& [name, config] : transforms) {
    auto t = make(name, config);
    auto run_with = [&](uint64_t seed) {
      auto e = image<float>({6, 6, 3}, pixels, kF32);
      t.apply(e, seed);
      return values<float>(e);
    };
    EXPECT_EQ(run_with(42), run_with(42)) << name;
    int differing = 0;
    for (uint64_t seed = 1; seed <= 10; ++seed) differing += run_with(seed) != run_with(0);
    EXPECT_GE(differing, 8) << name << ": seeds should change the result";
  }
}

// ---- resize -------------------------------------------------------------------------------------------------

TEST_F(TransformTest, ResizeIsBilinearWithHalfPixelCentres) {
  // 2x2 -> 4x4: output row/column i samples input (i + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25 (clamped).
  // Channel 0 is [[0, 4], [8, 12]]; channel 1 is its mirror 12 - x.
  auto t = make("resize", {{"size", {4, 4}}});
  auto e = image<uint8_t>({2, 2, 2}, {0, 12, 4, 8, 8, 4, 12, 0}, kU8);
  t.apply(e, 0);
  EXPECT_EQ(shape(e), (std::vector<int64_t>{4, 4, 2}));
  EXPECT_EQ(e.find("image")->dtype.code, kDLFloat);
  const std::vector<float> channel0{0, 1, 3, 4,  //
                                    2, 3, 5, 6,  //
                                    6, 7, 9, 10,  //
                                    8, 9, 11, 12};
  const auto v = values<float>(e);
  for (size_t i = 0; i < channel0.size(); ++i) {
    EXPECT_FLOAT_EQ(v[2 * i], channel0[i]) << "pixel " << i;
    EXPECT_FLOAT_EQ(v[2 * i + 1], 12.0f - channel0[i]) << "pixel " << i;
  }

  // 4x4 -> 2x2 samples input 0.5 and 2.5: the mean of each 2x2 block.
  auto down = make("resize", {{"size", {2, 2}}});
  std::vector<float> ramp(16);
  for (size_t i = 0; i < 16; ++i) ramp[i] = static_cast<float>(i);
  auto d = image<float>({4, 4}, ramp, kF32);
  down.apply(d, 0);
  EXPECT_EQ(shape(d), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(values<float>(d), (std::vector<float>{2.5f, 4.5f, 10.5f, 12.5f}));

  expect_invalid([&] { make("resize", {{"size", {4}}}); }, {"t.json#/map/0/size"});
  expect_invalid([&] { make("resize", {{"size", {4, 0}}}); }, {"t.json#/map/0/size"});
}

// ---- one_hot ------------------------------------------------------------------------------------------------

TEST_F(TransformTest, OneHotEncodesLabelsAndRejectsOutOfRange) {
  auto t = make("one_hot", {{"depth", 5}});
  auto e = label<int32_t>(3, kI32);
  t.apply(e, 0);
  EXPECT_EQ(shape(e, "label"), (std::vector<int64_t>{5}));
  EXPECT_EQ(values<float>(e, "label"), (std::vector<float>{0, 0, 0, 1, 0}));

  auto ints = make("one_hot", {{"depth", 3}, {"dtype", "int64"}});
  auto u = label<uint8_t>(0, kU8);
  ints.apply(u, 0);
  EXPECT_EQ(values<int64_t>(u, "label"), (std::vector<int64_t>{1, 0, 0}));

  auto high = label<int32_t>(5, kI32);
  expect_invalid([&] { t.apply(high, 0); }, {"label 5", "outside [0, 5)"});
  auto negative = label<int32_t>(-1, kI32);
  expect_invalid([&] { t.apply(negative, 0); }, {"label -1", "outside [0, 5)"});
  auto floating = label<float>(1.0f, kF32);
  expect_invalid([&] { t.apply(floating, 0); }, {"integer scalar", "float32"});
  expect_invalid([&] { make("one_hot", nlohmann::json::object()); }, {"t.json#/map/0/depth", "missing"});
  expect_invalid([&] { make("one_hot", {{"depth", 3}, {"dtype", "complex64"}}); }, {"t.json#/map/0/dtype"});
}
