// copy, blur, noise and downscale: the transforms that turn one image into an (input, target) pair for
// image-to-image models, on tiny hand-checked inputs, with their seeds and their refusals; and a denoising pair
// pipeline from an .npy file, repeatable and resumable.
#include "ramjet/data/input_pipeline.hpp"
#include "ramjet/plan/plan.hpp"
#include "ramjet/plugin/components.hpp"
#include "ramjet/plugin/failure.hpp"
#include "test_support.hpp"
#include "transform_fixture.hpp"

#include <gtest/gtest.h>
#include <ramjet/sdk.hpp>  // SeededRandom: the draws noise makes for a seed

#include <cmath>
#include <set>

using namespace ramjet::core;
using namespace ramjet::test;

namespace {

constexpr DLDataType kU8{kDLUInt, 8, 1};
constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kI32{kDLInt, 32, 1};

class PairTransformTest : public TransformFixture {};

void expect_near(const std::vector<float>& got, const std::vector<float>& want, float tolerance = 1e-5f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tolerance) << "value " << i;
}

}  // namespace

// ---- copy ---------------------------------------------------------------------------------------------------

TEST_F(PairTransformTest, CopyDuplicatesATensorThatThenLivesOnItsOwn) {
  auto t = make("copy", {{"from", "image"}, {"to", "target"}});
  auto e = image<uint8_t>({1, 2, 2}, {1, 2, 3, 4}, kU8);
  t.apply(e, 0);
  EXPECT_EQ(values<uint8_t>(e, "target"), (std::vector<uint8_t>{1, 2, 3, 4}));
  EXPECT_EQ(shape(e, "target"), (std::vector<int64_t>{1, 2, 2}));
  EXPECT_EQ(e.find("target")->dtype.code, kDLUInt);
  // Degrading the input afterwards leaves the target as it was.
  make("noise", {{"kind", "salt_and_pepper"}, {"amount", 1.0}, {"salt_vs_pepper", 1.0}}).apply(e, 7);
  EXPECT_EQ(values<uint8_t>(e), (std::vector<uint8_t>{255, 255, 255, 255}));
  EXPECT_EQ(values<uint8_t>(e, "target"), (std::vector<uint8_t>{1, 2, 3, 4}));
}

TEST_F(PairTransformTest, CopyRefusesAMissingSourceAnExistingTargetAndASelfCopy) {
  auto t = make("copy", {{"from", "image"}, {"to", "target"}});
  Example missing;
  missing.set("other", make_tensor(kU8, std::vector<int64_t>{1}));
  expect_invalid([&] { t.apply(missing, 0); }, {"copy", "no tensor named 'image'", "(from)"});
  auto taken = image<uint8_t>({1, 1}, {1}, kU8);
  taken.set("target", make_tensor(kU8, std::vector<int64_t>{1}));
  expect_invalid([&] { t.apply(taken, 0); }, {"copy", "already has a tensor named 'target'", "(to)"});
  expect_invalid([&] { make("copy", {{"from", "image"}, {"to", "image"}}); }, {"t.json#/map/0/to", "must differ"});
  expect_invalid([&] { make("copy", {{"to", "target"}}); }, {"t.json#/map/0/from", "missing"});
}

// ---- blur ---------------------------------------------------------------------------------------------------

TEST_F(PairTransformTest, BoxBlurReflectsAtTheEdgesWithoutRepeatingThem) {
  auto box = make("blur", {{"kind", "box"}, {"size", 3}});
  // One row: the left edge sees 3, 0, 3 (reflect-101), not 0, 0, 3 (edge repeated).
  auto row = image<float>({1, 4}, {0, 3, 6, 9}, kF32);
  box.apply(row, 0);
  expect_near(values<float>(row), {2, 3, 6, 7});
  // A single bright pixel: a corner's window holds it four times (rows and columns both reflect onto it), an
  // edge's twice, the centre's once.
  auto dot = image<uint8_t>({3, 3, 1}, {0, 0, 0, 0, 9, 0, 0, 0, 0}, kU8);
  box.apply(dot, 0);
  EXPECT_EQ(values<uint8_t>(dot), (std::vector<uint8_t>{4, 2, 4, 2, 1, 2, 4, 2, 4}));
  EXPECT_EQ(shape(dot), (std::vector<int64_t>{3, 3, 1}));
  // Channels are blurred each on its own.
  auto two = image<float>({1, 3, 2}, {0, 5, 3, 5, 6, 5}, kF32);
  box.apply(two, 0);
  expect_near(values<float>(two), {2, 5, 3, 5, 4, 5});
}

TEST_F(PairTransformTest, GaussianBlurUsesTheDefaultSigmaOrTheGivenOne) {
  const auto weights = [](int size, double sigma) {
    std::vector<double> w(static_cast<size_t>(size));
    double total = 0;
    for (int i = 0; i < size; ++i) total += w[static_cast<size_t>(i)] = std::exp(-std::pow(i - (size - 1) / 2.0, 2) / (2 * sigma * sigma));
    for (double& v : w) v /= total;
    return w;
  };
  // size 3: sigma = 0.3 * ((3 - 1) * 0.5 - 1) + 0.8 = 0.8, the centre weight about 0.522.
  const auto w3 = weights(3, 0.8);
  EXPECT_NEAR(w3[1], 0.52201, 1e-5);
  auto impulse = image<float>({1, 5}, {0, 0, 1, 0, 0}, kF32);
  make("blur", {{"kind", "gaussian"}, {"size", 3}}).apply(impulse, 0);
  expect_near(values<float>(impulse), {0, float(w3[0]), float(w3[1]), float(w3[2]), 0});
  const auto w5 = weights(5, 2.0);
  auto wide = image<float>({1, 7}, {0, 0, 0, 1, 0, 0, 0}, kF32);
  make("blur", {{"kind", "gaussian"}, {"size", 5}, {"sigma", 2.0}}).apply(wide, 0);
  expect_near(values<float>(wide), {0, float(w5[0]), float(w5[1]), float(w5[2]), float(w5[3]), float(w5[4]), 0});
  // A flat image stays flat, whatever the kernel (the weights sum to one).
  auto flat = image<uint8_t>({4, 4}, std::vector<uint8_t>(16, 200), kU8);
  make("blur", {{"kind", "gaussian"}, {"size", 7}, {"sigma", 3.0}}).apply(flat, 0);
  EXPECT_EQ(values<uint8_t>(flat), std::vector<uint8_t>(16, 200));
}

TEST_F(PairTransformTest, BlurRefusesEvenSizesStraySigmaAndOtherDtypes) {
  expect_invalid([&] { make("blur", {{"kind", "box"}, {"size", 4}}); }, {"t.json#/map/0/size", "odd"});
  expect_invalid([&] { make("blur", {{"kind", "box"}, {"size", 3}, {"sigma", 1.0}}); }, {"t.json#/map/0/sigma"});
  expect_invalid([&] { make("blur", {{"kind", "gaussian"}, {"size", 3}, {"sigma", 0}}); }, {"t.json#/map/0/sigma"});
  expect_invalid([&] { make("blur", {{"kind", "median"}, {"size", 3}}); }, {"t.json#/map/0/kind"});
  expect_invalid([&] { make("blur", {{"size", 3}}); }, {"t.json#/map/0/kind", "missing"});
  auto ints = image<int32_t>({2, 2}, {1, 2, 3, 4}, kI32);
  expect_invalid([&] { make("blur", {{"kind", "box"}, {"size", 3}}).apply(ints, 0); }, {"blur", "int32", "uint8 or float32"});
}

// ---- noise --------------------------------------------------------------------------------------------------

TEST_F(PairTransformTest, GaussianNoiseIsTheSeedsNormalDraws) {
  auto t = make("noise", {{"kind", "gaussian"}, {"stddev", 0.1}, {"mean", 0.5}});
  auto e = image<float>({2, 2, 1}, {0, 1, 2, 3}, kF32);
  t.apply(e, 99);
  ramjet::SeededRandom rng(99);
  std::vector<float> want;
  for (float v : {0.f, 1.f, 2.f, 3.f}) want.push_back(v + rng.normal(0.5f, 0.1f));
  EXPECT_EQ(values<float>(e), want);

  // Over many values the draws have the asked-for mean and spread.
  auto big = image<float>({100, 100}, std::vector<float>(10000, 0.0f), kF32);
  t.apply(big, 3);
  double sum = 0, squares = 0;
  for (float v : values<float>(big)) sum += v, squares += double(v) * v;
  const double mean = sum / 10000, stddev = std::sqrt(squares / 10000 - mean * mean);
  EXPECT_NEAR(mean, 0.5, 0.005);
  EXPECT_NEAR(stddev, 0.1, 0.005);
}

TEST_F(PairTransformTest, NoiseIsAPureFunctionOfTheSeedAndDiffersBetweenElements) {
  for (const nlohmann::json& config :
       {nlohmann::json{{"kind", "gaussian"}, {"stddev", 20}}, nlohmann::json{{"kind", "salt_and_pepper"}, {"amount", 0.2}}}) {
    auto t = make("noise", config);
    auto run_with = [&](uint64_t seed) {
      auto e = image<uint8_t>({8, 8, 3}, std::vector<uint8_t>(192, 128), kU8);
      t.apply(e, seed);
      return values<uint8_t>(e);
    };
    EXPECT_EQ(run_with(42), run_with(42)) << config.dump();
    int differing = 0;
    for (uint64_t seed = 1; seed <= 10; ++seed) differing += run_with(seed) != run_with(0);
    EXPECT_EQ(differing, 10) << config.dump() << ": each element's seed should give its own noise";
  }
}

TEST_F(PairTransformTest, NoiseOnUint8RoundsAndStaysInRangeAndClipBoundsIt) {
  auto wide = make("noise", {{"kind", "gaussian"}, {"stddev", 100}});
  auto e = image<uint8_t>({16, 16}, std::vector<uint8_t>(256, 128), kU8);
  wide.apply(e, 5);
  ramjet::SeededRandom rng(5);
  std::vector<uint8_t> want;
  for (int i = 0; i < 256; ++i)
    want.push_back(static_cast<uint8_t>(std::clamp(std::nearbyint(128.0 + rng.normal(0.0f, 100.0f)), 0.0, 255.0)));
  EXPECT_EQ(values<uint8_t>(e), want);
  const auto got = values<uint8_t>(e);
  EXPECT_NE(std::find(got.begin(), got.end(), 255), got.end()) << "stddev 100 should saturate some values";

  auto clipped = make("noise", {{"kind", "gaussian"}, {"stddev", 1.0}, {"clip", {-0.5, 0.5}}});
  auto f = image<float>({10, 10}, std::vector<float>(100, 0.4f), kF32);
  clipped.apply(f, 1);
  for (float v : values<float>(f)) {
    EXPECT_GE(v, -0.5f);
    EXPECT_LE(v, 0.5f);
  }
}

TEST_F(PairTransformTest, SaltAndPepperHitsTheAskedShareWithTheRangesEnds) {
  auto t = make("noise", {{"kind", "salt_and_pepper"}, {"amount", 0.3}, {"salt_vs_pepper", 0.25}});
  auto e = image<uint8_t>({100, 100}, std::vector<uint8_t>(10000, 100), kU8);
  t.apply(e, 11);
  int salt = 0, pepper = 0, kept = 0;
  for (uint8_t v : values<uint8_t>(e)) {
    salt += v == 255, pepper += v == 0, kept += v == 100;
  }
  EXPECT_EQ(salt + pepper + kept, 10000);
  EXPECT_NEAR((salt + pepper) / 10000.0, 0.3, 0.02);
  EXPECT_NEAR(salt / double(salt + pepper), 0.25, 0.03);

  // float32: salt 1.0 and pepper 0 by default, the clip's ends when there is one.
  auto f = image<float>({50, 50}, std::vector<float>(2500, 0.5f), kF32);
  make("noise", {{"kind", "salt_and_pepper"}, {"amount", 1.0}}).apply(f, 2);
  for (float v : values<float>(f)) EXPECT_TRUE(v == 0.0f || v == 1.0f) << v;
  auto g = image<float>({50, 50}, std::vector<float>(2500, 0.5f), kF32);
  make("noise", {{"kind", "salt_and_pepper"}, {"amount", 1.0}, {"clip", {-1, 2}}}).apply(g, 2);
  for (float v : values<float>(g)) EXPECT_TRUE(v == -1.0f || v == 2.0f) << v;
  auto none = image<uint8_t>({2, 2}, {1, 2, 3, 4}, kU8);
  make("noise", {{"kind", "salt_and_pepper"}, {"amount", 0.0}}).apply(none, 2);
  EXPECT_EQ(values<uint8_t>(none), (std::vector<uint8_t>{1, 2, 3, 4}));
}

TEST_F(PairTransformTest, NoiseRefusesFieldsOfTheOtherKindAndBadClips) {
  expect_invalid([&] { make("noise", {{"kind", "gaussian"}}); }, {"t.json#/map/0/stddev", "missing"});
  expect_invalid([&] { make("noise", {{"kind", "salt_and_pepper"}}); }, {"t.json#/map/0/amount", "missing"});
  expect_invalid([&] { make("noise", {{"kind", "gaussian"}, {"stddev", 1}, {"amount", 0.1}}); },
                 {"t.json#/map/0/amount", "does not apply"});
  expect_invalid([&] { make("noise", {{"kind", "salt_and_pepper"}, {"amount", 1.5}}); }, {"t.json#/map/0/amount"});
  expect_invalid([&] { make("noise", {{"kind", "gaussian"}, {"stddev", -1}}); }, {"t.json#/map/0/stddev"});
  expect_invalid([&] { make("noise", {{"kind", "gaussian"}, {"stddev", 1}, {"clip", {1, 0}}}); }, {"t.json#/map/0/clip"});
  auto ints = image<int32_t>({2, 2}, {1, 2, 3, 4}, kI32);
  expect_invalid([&] { make("noise", {{"kind", "gaussian"}, {"stddev", 1}}).apply(ints, 0); }, {"noise", "int32"});
}

// ---- downscale ----------------------------------------------------------------------------------------------

TEST_F(PairTransformTest, DownscaleAveragesBlocks) {
  std::vector<uint8_t> ramp(16);
  for (int i = 0; i < 16; ++i) ramp[static_cast<size_t>(i)] = static_cast<uint8_t>(i);
  auto e = image<uint8_t>({4, 4, 1}, ramp, kU8);
  make("downscale", {{"factor", 2}}).apply(e, 0);
  EXPECT_EQ(shape(e), (std::vector<int64_t>{2, 2, 1}));
  EXPECT_EQ(e.find("image")->dtype.code, kDLFloat);
  EXPECT_EQ(values<float>(e), (std::vector<float>{2.5f, 4.5f, 10.5f, 12.5f}));
  // Two channels, [H, W] without a channel axis, factor 1 as the identity.
  auto rgb = image<float>({2, 2, 2}, {1, 10, 2, 20, 3, 30, 4, 40}, kF32);
  make("downscale", {{"factor", 2}}).apply(rgb, 0);
  EXPECT_EQ(values<float>(rgb), (std::vector<float>{2.5f, 25.0f}));
  auto flat = image<float>({2, 2}, {1, 2, 3, 4}, kF32);
  make("downscale", {{"factor", 1}}).apply(flat, 0);
  EXPECT_EQ(shape(flat), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(values<float>(flat), (std::vector<float>{1, 2, 3, 4}));
}

TEST_F(PairTransformTest, DownscaleRestoresTheSizeByNearestOrBilinear) {
  std::vector<float> ramp(16);
  for (int i = 0; i < 16; ++i) ramp[static_cast<size_t>(i)] = static_cast<float>(i);
  auto nearest = image<float>({4, 4, 1}, ramp, kF32);
  make("downscale", {{"factor", 2}, {"restore", "nearest"}}).apply(nearest, 0);
  EXPECT_EQ(shape(nearest), (std::vector<int64_t>{4, 4, 1}));
  EXPECT_EQ(values<float>(nearest), (std::vector<float>{2.5f, 2.5f, 4.5f, 4.5f, 2.5f, 2.5f, 4.5f, 4.5f, 10.5f, 10.5f,
                                                        12.5f, 12.5f, 10.5f, 10.5f, 12.5f, 12.5f}));
  // Bilinear, half-pixel centres: the first row samples x = -0.25, 0.25, 0.75, 1.25 of [2.5, 4.5].
  auto bilinear = image<float>({4, 4, 1}, ramp, kF32);
  make("downscale", {{"factor", 2}, {"restore", "bilinear"}}).apply(bilinear, 0);
  const auto got = values<float>(bilinear);
  expect_near({got[0], got[1], got[2], got[3]}, {2.5f, 3.0f, 4.0f, 4.5f});
  // ... and agrees with resize (checked against TensorFlow) after a plain downscale.
  auto two_step = image<float>({4, 4, 1}, ramp, kF32);
  make("downscale", {{"factor", 2}}).apply(two_step, 0);
  make("resize", {{"size", {4, 4}}}).apply(two_step, 0);
  expect_near(got, values<float>(two_step));
}

TEST_F(PairTransformTest, DownscaleRefusesSizesThatAreNotMultiplesAndBadFields) {
  auto t = make("downscale", {{"factor", 2}});
  auto odd = image<float>({5, 4}, std::vector<float>(20, 0.0f), kF32);
  expect_invalid([&] { t.apply(odd, 0); }, {"downscale", "5x4", "factor 2"});
  expect_invalid([&] { make("downscale", {{"factor", 0}}); }, {"t.json#/map/0/factor"});
  expect_invalid([&] { make("downscale", {{"factor", 2}, {"restore", "cubic"}}); }, {"t.json#/map/0/restore"});
  expect_invalid([&] { make("downscale", nlohmann::json::object()); }, {"t.json#/map/0/factor", "missing"});
}

// ---- a denoising pipeline: npy -> copy (clean target) -> noise (input), as a manifest runs it ---------------

namespace {

// A float32 .npy file of `count` 4x4x1 images, image i filled with i.
std::string npy_images(int count) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(count) + ", 4, 4, 1), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size()), out += '\0';
  out += header;
  for (int i = 0; i < count; ++i)
    for (int k = 0; k < 16; ++k) {
      const float v = static_cast<float>(i);
      out.append(reinterpret_cast<const char*>(&v), 4);
    }
  return out;
}

using BatchBytes = std::vector<std::pair<std::string, std::string>>;
BatchBytes bytes_of(const Example& batch) {
  BatchBytes out;
  for (const auto& e : batch.entries) {
    const DLTensor& t = e.tensor->dl_tensor;
    out.emplace_back(e.name, std::string(static_cast<const char*>(t.data), byte_size(t)));
  }
  return out;
}

class DenoisingPipelineTest : public ::testing::Test {
 protected:
  PluginRegistry registry{DiscoveryOptions{{stock_plugin_dir()}, {}, {}}};
  TempDir dir;
  nlohmann::json train = {{"source", {{"type", "npy"}, {"files", {{"image", "x.npy"}}}}},
                          {"map", {{{"type", "copy"}, {"from", "image"}, {"to", "target"}}}},
                          {"shuffle", 8},
                          {"augment", {{{"type", "noise"}, {"kind", "gaussian"}, {"stddev", 0.5}}}},
                          {"batch", 3},
                          {"epochs", 2}};

  std::unique_ptr<InputPipeline> open(uint64_t seed) {
    write_file(dir / "x.npy", npy_images(8));
    nlohmann::json doc = {{"seed", seed}, {"data", {{"train", train}}}};
    write_file(dir / "p.json", doc.dump());
    Plan plan = require_plan(load_pipeline_manifest(dir / "p.json"), registry);
    return std::make_unique<InputPipeline>(*plan.train_data, registry, seed);
  }
  std::vector<BatchBytes> all_batches(uint64_t seed) {
    auto p = open(seed);
    std::vector<BatchBytes> out;
    while (auto b = p->next_batch()) out.push_back(bytes_of(*b));
    return out;
  }
};

}  // namespace

TEST_F(DenoisingPipelineTest, PairsAreCleanTargetsWithSeededNoisyInputs) {
  auto p = open(5);
  std::set<std::vector<float>> noise_seen;
  int batches = 0;
  while (auto b = p->next_batch()) {
    ++batches;
    const DLTensor* image = b->find("image");
    const DLTensor* target = b->find("target");
    ASSERT_TRUE(image && target);
    ASSERT_EQ(element_count(*image), element_count(*target));
    const auto* x = static_cast<const float*>(image->data);
    const auto* y = static_cast<const float*>(target->data);
    for (int64_t e = 0; e < image->shape[0]; ++e) {
      std::vector<float> noise;
      for (int k = 0; k < 16; ++k) {
        EXPECT_EQ(y[e * 16 + k], y[e * 16]) << "the target is the clean image";
        noise.push_back(x[e * 16 + k] - y[e * 16 + k]);
      }
      EXPECT_TRUE(noise_seen.insert(noise).second) << "every element of every epoch gets its own noise";
    }
  }
  EXPECT_EQ(batches, 6);  // 2 epochs of 8 elements in batches of 3 (3, 3, 2 each)
  EXPECT_EQ(all_batches(5), all_batches(5)) << "same run seed, same pairs";
  EXPECT_NE(all_batches(5), all_batches(6)) << "another run seed, other noise";
}

TEST_F(DenoisingPipelineTest, AResumedRunRedrawsTheSamePairs) {
  const auto whole = all_batches(9);
  std::vector<PipelineState> states;
  {
    auto p = open(9);
    while (p->next_batch()) states.push_back(p->state());
  }
  ASSERT_EQ(states.size(), whole.size());
  for (size_t k : {size_t{1}, size_t{2}, size_t{4}}) {
    auto p = open(9);
    p->restore(states[k - 1]);
    std::vector<BatchBytes> rest;
    while (auto b = p->next_batch()) rest.push_back(bytes_of(*b));
    EXPECT_EQ(rest, std::vector<BatchBytes>(whole.begin() + static_cast<std::ptrdiff_t>(k), whole.end()))
        << "resumed after " << k << " batches";
  }
}
