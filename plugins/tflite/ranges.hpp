// Calibrated ranges → int8 activation parameters. Three ways to pick the range of a tensor from what its
// observer saw: min-max, a percentile of each tail, or the clipping range that minimises the quantization MSE.
#pragma once

#include "calibration.hpp"

#include <cstdint>
#include <string>

namespace tflite_plugin {

struct Range {
  float min = 0, max = 0;
};

enum class RangeMethod { minmax, percentile, mse };

// "minmax" | "percentile" | "mse"; throws naming `where` otherwise.
RangeMethod parse_range_method(const std::string& name, const std::string& where);
const char* range_method_name(RangeMethod method);

Range minmax_range(const TensorObserver& observer);
// Clips each tail at `percentile` (e.g. 99.99: the lowest and highest 0.01 % are clipped).
Range percentile_range(const TensorObserver& observer, double percentile);
// Searches clipping ranges inside the min-max range for the least expected squared error: clipped values cost
// their distance to the bound, values inside cost the uniform rounding noise step²/12.
Range mse_range(const TensorObserver& observer);
Range calibrated_range(const TensorObserver& observer, RangeMethod method, double percentile);

// Asymmetric int8 per the TFLite 8-bit spec: the range widened to include 0, scale = (max − min) / 255,
// zero_point = round(−128 − min / scale) clamped to [−128, 127].
struct AffineParams {
  float scale = 1;
  int32_t zero_point = 0;
};
AffineParams int8_activation_params(Range range);

}  // namespace tflite_plugin
