// transform "decode_image": PNG or JPEG bytes (a uint8 [N] tensor, e.g. from image_folder with decode = false or a
// tfrecord bytes feature) -> uint8 [H, W, C], like tf.io.decode_image. The format is recognised by its signature.
// Config: key ("image"), channels (0 = as stored, 1, 3).
#pragma once

#include <ramjet/sdk.hpp>

#include <string>

namespace stock_images {

class DecodeImage {
 public:
  static ramjet::Fields fields();
  explicit DecodeImage(const ramjet::Config& config);
  void apply(ramjet::Example& example, uint64_t seed) const;

 private:
  std::string key_;
  int channels_;
};

}  // namespace stock_images
