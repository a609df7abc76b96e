// transform "downscale": shrinks an [H, W, C] (or [H, W]) image by an integer `factor`, each output pixel the
// mean of its factor x factor block (area averaging, what cv2.INTER_AREA computes for integer factors), and
// optionally scales it back up to H x W, the low-resolution input of a super-resolution pair.
//   restore "none": output [H/factor, W/factor, C];
//   restore "nearest": each low-resolution pixel repeated factor x factor times, [H, W, C];
//   restore "bilinear": bilinear with half-pixel centres (as resize / tf.image.resize), [H, W, C].
// H and W must be multiples of factor (put random_crop or resize before it). Input uint8, int32, float32 or
// float64; output float32, like resize.
// Config: key ("image"), factor (integer >= 1, required), restore ("none").
#pragma once

#include <ramjet/sdk.hpp>

#include <string>

namespace stock_transforms {

class Downscale {
 public:
  static ramjet::Fields fields();
  explicit Downscale(const ramjet::Config& config);
  void apply(ramjet::Example& example, uint64_t seed) const;

 private:
  std::string key_;
  int64_t factor_;
  std::string restore_;
};

}  // namespace stock_transforms
