// transforms "random_brightness" and "random_contrast" on float32 channels-last images, as tf.image does them.
// Both work in place (the image keeps its shape and dtype) and draw their factor from the element's seed.
//
// random_brightness: x += delta, delta uniform in [-max_delta, max_delta] (tf.image.random_brightness; no clipping).
//   Config: key ("image"), max_delta (required, >= 0).
// random_contrast: per channel c, x = (x - mean_c) * factor + mean_c, with mean_c over all pixels and factor
//   uniform in [lower, upper] (tf.image.random_contrast / adjust_contrast).
//   Config: key ("image"), lower, upper (required, 0 <= lower <= upper).
// Integer images are refused: normalize or cast them to float32 first.
#pragma once

#include <ramjet/sdk.hpp>

#include <string>

namespace stock_transforms {

class RandomBrightness {
 public:
  static ramjet::Fields fields();
  explicit RandomBrightness(const ramjet::Config& config);
  void apply(ramjet::Example& example, uint64_t seed) const;

 private:
  std::string key_;
  double max_delta_;
};

class RandomContrast {
 public:
  static ramjet::Fields fields();
  static void check(const nlohmann::json& config, ramjet::Problems& problems);  // lower <= upper
  explicit RandomContrast(const ramjet::Config& config);
  void apply(ramjet::Example& example, uint64_t seed) const;

 private:
  std::string key_;
  double lower_, upper_;
};

}  // namespace stock_transforms
