// transform "normalize": y = (x × scale − mean[c]) / std[c], written as float32, channels-last.
// Config: key ("image"), scale (1), mean (number or per-channel array, 0), std (number or per-channel array, 1).
#pragma once

#include <ramjet/sdk.hpp>

#include <string>
#include <vector>

namespace stock_transforms {

class Normalize {
 public:
  static ramjet::Fields fields();
  explicit Normalize(const ramjet::Config& config);
  void apply(ramjet::Example& example, uint64_t seed) const;

 private:
  std::string key_;
  float scale_;
  std::vector<float> mean_, inv_std_;
};

}  // namespace stock_transforms
