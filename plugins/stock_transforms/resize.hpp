// transform "resize": bilinear resize of an [H, W, C] (or [H, W]) image to [h, w, C], with half-pixel centres —
// what tf.image.resize(method="bilinear", antialias=False) computes. Input uint8, int32, float32 or float64;
// output float32.
// Config: key ("image"), size ([h, w], required).
#pragma once

#include <ramjet/sdk.hpp>

#include <string>

namespace stock_transforms {

class Resize {
 public:
  static ramjet::Fields fields();
  explicit Resize(const ramjet::Config& config);
  void apply(ramjet::Example& example, uint64_t seed) const;

 private:
  std::string key_;
  int64_t height_, width_;
};

}  // namespace stock_transforms
