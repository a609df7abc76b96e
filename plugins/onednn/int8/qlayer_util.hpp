// What the int8 layers share: their input, their output's quantization, the clamp a fused activation means, and
// the checks on their int8/int32 parameters.
#pragma once

#include "qplan.hpp"

namespace onednn::int8 {

// An activation's clamp in the int8 domain, as TFLite's CalculateActivationRangeQuantized.
struct ClampRange {
  int32_t lo = -128, hi = 127;
  bool narrows_u8() const { return lo > -128 || hi < 127; }
};
ClampRange activation_range(const NodeSpec& node, const ActivationQuant& out);

QValue& only_input(const NodeSpec& node, QBuilder& b);
const ActivationQuant& output_quant(const NodeSpec& node, const QBuilder& b);
// Refuses a node whose graph shape is not `shape`, the one its input and attributes give.
void check_output_shape(const NodeSpec& node, const Shape& shape);
// The output's quantization of an op that keeps its input's (pools, resizes, pads, crops: docs/quantized-graph.md);
// a qgraph that says otherwise is refused.
const ActivationQuant& same_quant(const NodeSpec& node, const QBuilder& b, const QValue& in);

// The node's parameter bound to `role`, checked for dtype and shape; nullptr when optional and absent.
const QParam* checked_param(const NodeSpec& node, const QBuilder& b, const char* role, bool int8, const Shape& shape,
                            bool required);

// Per output channel: in_scale * w_scale[c] / out_scale (`channels` values, or one for a per-tensor kernel).
std::vector<float> output_scales(const NodeSpec& node, const QBuilder& b, const ActivationQuant& in,
                                 const ActivationQuant& out, int64_t channels);

// What a conv2d or dense step on the plugin's own kernels (small_conv, depthwise, exact_conv) settles once, where
// oneDNN's steps hand the same to a primitive: its parameters' names, the output scales, both zero points (u8
// domain) and the u8 clamp of its saturation and fused activation.
struct OwnKernelRequant {
  std::string kernel, bias;   // parameter names; bias "" when the node has none
  std::vector<float> scales;  // output_scales'
  int32_t zp_in = 0, zp_out = 0;
  float lo = 0, hi = 255;
};
OwnKernelRequant own_kernel_requant(const NodeSpec& node, const QBuilder& b, const ActivationQuant& in,
                                    int64_t channels);

}  // namespace onednn::int8
