// transform "random_flip": mirrors an [H, W, C] image left-right and/or top-bottom, each with `probability`,
// decided by the element's seed (so the same element flips the same way at any parallelism).
// Config: key ("image"), horizontal (true), vertical (false), probability (0.5).
#pragma once

#include <ramjet/sdk.hpp>

#include <string>

namespace stock_transforms {

class RandomFlip {
 public:
  static ramjet::Fields fields();
  explicit RandomFlip(const ramjet::Config& config);
  void apply(ramjet::Example& example, uint64_t seed) const;

 private:
  std::string key_;
  bool horizontal_, vertical_;
  double probability_;
};

}  // namespace stock_transforms
