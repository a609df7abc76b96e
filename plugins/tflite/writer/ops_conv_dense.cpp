#include "writer/kernel_layout.hpp"
#include "writer/model_writer.hpp"

namespace tflite_plugin::writer {

TensorQuant ModelWriter::kernel_quant(const json& node, const std::string& kernel_name) const {
  TensorQuant q = quant_of(kernel_name);
  if (q.dtype != "int8") fail(describe(node) + ": kernel '" + kernel_name + "' must be int8");
  return q;
}

void ModelWriter::conv2d(const json& node) {
  const std::string input = node.at("inputs").at(0);
  const Shape& in = shape_of(input);
  const std::string kernel_name = node.at("params").at("kernel");
  const Shape k = checked_shape(graph_.at("params").at(kernel_name).at("shape"), describe(node) + ": kernel");
  if (in.size() != 3 || k.size() != 4)  // [H, W, C] input, [kh, kw, in/groups, out] kernel
    fail(describe(node) + ": a conv2d needs a rank-3 input and a rank-4 kernel, got " + shape_text(in) + " and " +
         shape_text(k));
  const int64_t groups = node.at("attrs").value("groups", int64_t{1});
  const bool depthwise = groups > 1 && groups == in.at(2) && k[2] == 1;
  if (groups > 1 && !depthwise)
    fail(describe(node) + ": grouped convolution (groups=" + std::to_string(groups) + ") has no TFLite form");
  const TensorQuant kq = kernel_quant(node, kernel_name);
  if (kq.scale.size() > 1 && kq.axis != 3) fail(describe(node) + ": per-channel kernel scales must be on IR axis 3");
  const int8_t* w = param_data<int8_t>(kernel_name, node, static_cast<size_t>(product(k)));
  const int64_t kh = k[0], kw = k[1], ci = k[2], co = k[3];
  // The per-channel axis is the output channels' in either layout: last in [1, kh, kw, C·m], first in OHWI.
  int32_t weights;
  if (depthwise) {  // IR memory order is already TFLite's (kernel_layout.hpp)
    const uint32_t buffer = tables_.add_buffer(w, static_cast<size_t>(product(k)));
    weights = tables_.add_tensor(kernel_name, {1, kh, kw, co}, tfl::TensorType_INT8, buffer, tables_.quantization(kq, 3), false);
  } else {
    const std::vector<int8_t> ohwi = hwio_to_ohwi(w, k);
    const uint32_t buffer = tables_.add_buffer(ohwi.data(), ohwi.size());
    weights = tables_.add_tensor(kernel_name, {co, kh, kw, ci}, tfl::TensorType_INT8, buffer, tables_.quantization(kq, 0), false);
  }
  const int32_t bias = bias_tensor(node, co);
  const int32_t x = value(node, 0);
  const auto strides = pair_attr(node, "strides", 1), dilation = pair_attr(node, "dilation", 1);
  const tfl::Padding padding = padding_of(node, in, {kh, kw}, strides, dilation);
  const auto act = fused_activation(node);
  const int32_t y = node_output(node);
  const auto sh = static_cast<int32_t>(strides.first), sw = static_cast<int32_t>(strides.second);
  const auto dh = static_cast<int32_t>(dilation.first), dw = static_cast<int32_t>(dilation.second);
  // Hybrid kernels (float input, int8 weights) have versions of their own: per channel 6 (depthwise) and 5
  // (conv), per tensor 4 and 2 (TFLite's op version table, which calls it per channel when there is one scale
  // per output channel). The per-channel conv hybrid kernel quantizes its input asymmetrically by itself;
  // Conv2DOptions has no field for it.
  const bool per_channel = static_cast<int64_t>(kq.scale.size()) == co;
  if (depthwise) {
    const int32_t version = float_activations_ ? (per_channel ? 6 : 4) : 3;
    const auto options = tfl::CreateDepthwiseConv2DOptions(fbb(), padding, sw, sh, static_cast<int32_t>(co / in[2]), act, dw, dh);
    tables_.add_op(tfl::BuiltinOperator_DEPTHWISE_CONV_2D, version, {x, weights, bias}, {y},
                   tfl::BuiltinOptions_DepthwiseConv2DOptions, options.Union());
  } else {
    const int32_t version = float_activations_ ? (per_channel ? 5 : 2) : 3;
    const auto options = tfl::CreateConv2DOptions(fbb(), padding, sw, sh, act, dw, dh);
    tables_.add_op(tfl::BuiltinOperator_CONV_2D, version, {x, weights, bias}, {y}, tfl::BuiltinOptions_Conv2DOptions,
                   options.Union());
  }
}

void ModelWriter::dense(const json& node) {
  const std::string kernel_name = node.at("params").at("kernel");
  const Shape k = checked_shape(graph_.at("params").at(kernel_name).at("shape"), describe(node) + ": kernel");
  if (k.size() != 2) fail(describe(node) + ": a dense kernel is [in, out], got " + shape_text(k));  // [in, out]
  const TensorQuant kq = kernel_quant(node, kernel_name);
  if (kq.scale.size() != 1) fail(describe(node) + ": FullyConnected weights must be quantized per tensor");
  const int8_t* w = param_data<int8_t>(kernel_name, node, static_cast<size_t>(product(k)));
  const int64_t in = k[0], out = k[1];
  const std::vector<int8_t> out_in = in_out_to_out_in(w, in, out);
  const uint32_t buffer = tables_.add_buffer(out_in.data(), out_in.size());
  const int32_t weights = tables_.add_tensor(kernel_name, {out, in}, tfl::TensorType_INT8, buffer, tables_.quantization(kq, 0), false);
  const int32_t bias = bias_tensor(node, out);
  const int32_t x = value(node, 0);
  const auto act = fused_activation(node);
  const int32_t y = node_output(node);
  // Hybrid: quantize each input row asymmetrically (as TensorFlow's converter asks; after a relu a symmetric
  // scale would waste half the int8 range), FULLY_CONNECTED version 9 for that scheme.
  const auto options = tfl::CreateFullyConnectedOptions(fbb(), act, tfl::FullyConnectedOptionsWeightsFormat_DEFAULT,
                                                        false, float_activations_);
  tables_.add_op(tfl::BuiltinOperator_FULLY_CONNECTED, float_activations_ ? 9 : 4, {x, weights, bias}, {y},
                 tfl::BuiltinOptions_FullyConnectedOptions, options.Union());
}

}  // namespace tflite_plugin::writer
