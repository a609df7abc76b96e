// transform "random_crop": zero-pads an [H, W, C] (or [H, W]) image by `padding` on every side, then cuts an
// [h, w] window at an offset drawn uniformly over all valid offsets — torchvision's RandomCrop(size, padding)
// and tf.image.pad_to_bounding_box followed by tf.image.random_crop. Any dtype; the output keeps it.
// Config: key ("image"), size ([h, w] or one int for a square, required), padding (0).
#pragma once

#include <ramjet/sdk.hpp>

#include <string>

namespace stock_transforms {

class RandomCrop {
 public:
  static ramjet::Fields fields();
  explicit RandomCrop(const ramjet::Config& config);
  void apply(ramjet::Example& example, uint64_t seed) const;

 private:
  std::string key_;
  int64_t height_, width_, padding_;
};

}  // namespace stock_transforms
