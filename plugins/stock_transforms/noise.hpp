// transform "noise": random noise on an image (or any uint8/float32 tensor), the degraded input of a denoising
// pair. The draws come from the element's seed (ramjet::SeededRandom, as random_flip), so an element gets the
// same noise at any parallelism and in a resumed run, and different elements get different noise.
//   kind "gaussian": adds mean + stddev * N(0, 1) to every value.
//   kind "salt_and_pepper": each value independently (as skimage.util.random_noise) becomes, with probability
//     `amount`, salt (the clip's high, else 255 for uint8 / 1.0 for float32) with probability `salt_vs_pepper`,
//     else pepper (the clip's low, else 0).
// Output: the input's dtype and shape; uint8 results are rounded to nearest and kept in 0..255; `clip` [low, high]
// bounds every output value.
// Config: key ("image"), kind (required), stddev (gaussian, required, >= 0), mean (gaussian, 0),
//         amount (salt_and_pepper, required, in [0, 1]), salt_vs_pepper (salt_and_pepper, 0.5, in [0, 1]),
//         clip ([low, high], optional).
#pragma once

#include <ramjet/sdk.hpp>

#include <optional>
#include <string>

namespace stock_transforms {

class Noise {
 public:
  static ramjet::Fields fields();
  static void check(const nlohmann::json& config, ramjet::Problems& problems);
  explicit Noise(const ramjet::Config& config);
  void apply(ramjet::Example& example, uint64_t seed) const;

 private:
  template <class T>
  void add_noise(T* x, int64_t n, uint64_t seed) const;

  std::string key_;
  bool gaussian_ = true;
  double stddev_ = 0, mean_ = 0, amount_ = 0, salt_vs_pepper_ = 0.5;
  std::optional<std::pair<double, double>> clip_;
};

}  // namespace stock_transforms
