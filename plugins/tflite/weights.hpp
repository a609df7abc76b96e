// Weight and bias quantization per the TFLite 8-bit spec: symmetric int8 weights in [-127, 127] with zero point
// 0 (per channel along one IR axis, or per tensor), int32 biases with scale = input × weight scale.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tflite_plugin {

struct QuantizedWeights {
  std::vector<int8_t> values;
  std::vector<float> scales;  // one per channel, or one
};

// `channels` is the size of the per-channel axis, or 1 for one scale over the whole tensor; `inner` the product of
// the axes after it (1 for IR conv kernels [kh, kw, in, out]; `in` for conv2d_transpose's [kh, kw, out, in]).
// scale = max|w| / 127; a channel of zeros gets 1/127 so the bias that rides on it stays representable.
QuantizedWeights quantize_symmetric(std::span<const float> weights, int64_t channels, int64_t inner = 1);

struct QuantizedBias {
  std::vector<int32_t> values;
  std::vector<float> scales;
  int64_t saturated = 0;  // values that did not fit in int32 and were clamped
};

// scale[c] = input_scale × weight_scales[c] (weight_scales of size 1 applies to every channel).
QuantizedBias quantize_bias(std::span<const float> bias, float input_scale, std::span<const float> weight_scales);

}  // namespace tflite_plugin
