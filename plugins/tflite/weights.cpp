#include "weights.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tflite_plugin {

QuantizedWeights quantize_symmetric(std::span<const float> weights, int64_t channels, int64_t inner) {
  const auto c = static_cast<size_t>(channels < 1 ? 1 : channels);
  const auto n = static_cast<size_t>(inner < 1 ? 1 : inner);
  auto channel = [c, n](size_t i) { return (i / n) % c; };
  std::vector<float> abs_max(c, 0.0f);
  for (size_t i = 0; i < weights.size(); ++i) abs_max[channel(i)] = std::max(abs_max[channel(i)], std::abs(weights[i]));
  QuantizedWeights q;
  q.scales.resize(c);
  for (size_t k = 0; k < c; ++k) q.scales[k] = abs_max[k] > 0 ? abs_max[k] / 127.0f : 1.0f / 127.0f;
  q.values.resize(weights.size());
  for (size_t i = 0; i < weights.size(); ++i) {
    const float v = std::round(weights[i] / q.scales[channel(i)]);
    q.values[i] = static_cast<int8_t>(std::clamp(v, -127.0f, 127.0f));
  }
  return q;
}

QuantizedBias quantize_bias(std::span<const float> bias, float input_scale, std::span<const float> weight_scales) {
  QuantizedBias q;
  q.scales.resize(weight_scales.size());
  for (size_t k = 0; k < weight_scales.size(); ++k) q.scales[k] = input_scale * weight_scales[k];
  q.values.resize(bias.size());
  constexpr double lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
  for (size_t i = 0; i < bias.size(); ++i) {
    const double scale = q.scales[q.scales.size() == 1 ? 0 : i];
    const double v = std::round(static_cast<double>(bias[i]) / scale);
    if (v < lo || v > hi) ++q.saturated;
    q.values[i] = static_cast<int32_t>(std::clamp(v, lo, hi));
  }
  return q;
}

}  // namespace tflite_plugin
