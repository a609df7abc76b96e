// transform "cast": converts one tensor to another dtype (float32, float64, int32, uint8), saturating
// integer targets.
// Config: key ("image"), dtype (required).
#pragma once

#include <ramjet/sdk.hpp>

#include <string>

namespace stock_transforms {

class Cast {
 public:
  static ramjet::Fields fields();
  explicit Cast(const ramjet::Config& config);
  void apply(ramjet::Example& example, uint64_t seed) const;

 private:
  std::string key_;
  DLDataType dtype_{};
};

}  // namespace stock_transforms
