// transform "blur": a box or Gaussian blur of an [H, W, C] (or [H, W]) image, each channel on its own, as the
// degraded input of a denoising/deblurring pair. What cv2.blur / cv2.GaussianBlur compute with their default
// border: edges by reflection without repeating the edge pixel (BORDER_REFLECT_101: ...c b | a b c d | c b...).
// Input uint8 or float32; the output has the input's dtype and shape (uint8 rounded to nearest, within 0..255).
// Config: key ("image"), kind ("box" | "gaussian", required), size (odd kernel side >= 1, required),
//         sigma (gaussian only, > 0; absent: cv2's choice for the size, 0.3*((size-1)*0.5-1)+0.8).
#pragma once

#include <ramjet/sdk.hpp>

#include <string>
#include <vector>

namespace stock_transforms {

class Blur {
 public:
  static ramjet::Fields fields();
  static void check(const nlohmann::json& config, ramjet::Problems& problems);
  explicit Blur(const ramjet::Config& config);
  void apply(ramjet::Example& example, uint64_t seed) const;

 private:
  std::string key_;
  std::vector<float> kernel_;  // 1-D weights summing to 1, applied along rows then columns
};

}  // namespace stock_transforms
