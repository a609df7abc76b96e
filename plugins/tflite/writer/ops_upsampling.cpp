// TRANSPOSE_CONV (conv2d_transpose) and RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR (resize): the layers that make
// images larger.
#include "writer/model_writer.hpp"

namespace tflite_plugin::writer {
namespace {

// Where TFLite's TRANSPOSE_CONV starts its output on one axis: it pads as the convolution from the output back to
// the input would (ComputePaddingHeightWidth on the output size), the first row at -top; and it refuses a file
// whose convolution would not give back the input's size. -1 where `same` (or VALID) cannot express this axis.
int64_t tflite_transpose_top(int64_t in, int64_t out, int64_t k, int64_t s, bool same) {
  const int64_t conv_out = same ? (out + s - 1) / s : (out - k + s) / s;
  if (conv_out != in) return -1;
  return std::max<int64_t>((conv_out - 1) * s + k - out, 0) / 2;
}

// An IR kernel [kh, kw, out, in] as TRANSPOSE_CONV's [out, kh, kw, in] (OHWI).
template <class T>
std::vector<T> hwoi_to_ohwi(const T* w, const Shape& k) {
  const int64_t kh = k[0], kw = k[1], co = k[2], ci = k[3];
  std::vector<T> out(static_cast<size_t>(kh * kw * co * ci));
  for (int64_t y = 0; y < kh; ++y)
    for (int64_t x = 0; x < kw; ++x)
      for (int64_t o = 0; o < co; ++o)
        for (int64_t i = 0; i < ci; ++i)
          out[static_cast<size_t>(((o * kh + y) * kw + x) * ci + i)] = w[((y * kw + x) * co + o) * ci + i];
  return out;
}

}  // namespace

// Inputs in TFLite's order: the output shape (an int32 constant [1, OH, OW, F]), the OHWI weights, the input, the
// bias. Full integer: int8 weights with a scale per filter (quantized dimension 0 of OHWI) or one, int32 bias;
// dynamic range: all float32.
void ModelWriter::conv2d_transpose(const json& node) {
  const Shape& in = shape_of(node.at("inputs").at(0));
  const std::string kernel_name = node.at("params").at("kernel");
  const Shape k = checked_shape(graph_.at("params").at(kernel_name).at("shape"), describe(node) + ": kernel");
  const Shape out = checked_shape(node.at("shape"), describe(node));
  if (in.size() != 3 || k.size() != 4 || out.size() != 3 || k[3] != in[2] || k[2] != out[2])
    fail(describe(node) + ": a conv2d_transpose needs an [H, W, C] input and a [kh, kw, filters, C] kernel, got " +
         shape_text(in) + " and " + shape_text(k));
  const auto strides = pair_attr(node, "strides", 1);
  const std::vector<int64_t> pads = node.at("attrs").at("padding").get<std::vector<int64_t>>();
  if (pads.size() != 4) fail(describe(node) + ": padding must be [top, bottom, left, right]");
  tfl::Padding padding = tfl::Padding_VALID;
  auto tops = [&](bool same) {
    return std::pair{tflite_transpose_top(in[0], out[0], k[0], strides.first, same),
                     tflite_transpose_top(in[1], out[1], k[1], strides.second, same)};
  };
  if (tops(false) == std::pair{pads[0], pads[2]}) padding = tfl::Padding_VALID;
  else if (tops(true) == std::pair{pads[0], pads[2]}) padding = tfl::Padding_SAME;
  else
    fail(describe(node) + ": padding " + shape_text(pads) + " starts the output where neither SAME nor VALID does, " +
         "which is all TFLite's TRANSPOSE_CONV can express");
  const size_t count = static_cast<size_t>(product(k));
  int32_t weights;
  const Shape ohwi_shape{k[2], k[0], k[1], k[3]};
  if (float_activations_) {
    const std::vector<float> ohwi = hwoi_to_ohwi(param_data<float>(kernel_name, node, count), k);
    const uint32_t buffer = tables_.add_buffer(ohwi.data(), ohwi.size() * sizeof(float));
    weights = tables_.add_tensor(kernel_name, ohwi_shape, tfl::TensorType_FLOAT32, buffer, 0, false);
  } else {
    const TensorQuant kq = kernel_quant(node, kernel_name);
    if (kq.scale.size() != 1 && (kq.axis != 2 || static_cast<int64_t>(kq.scale.size()) != k[2]))
      fail(describe(node) + ": TRANSPOSE_CONV weights need one scale, or one per filter on IR axis 2");
    const std::vector<int8_t> ohwi = hwoi_to_ohwi(param_data<int8_t>(kernel_name, node, count), k);
    const uint32_t buffer = tables_.add_buffer(ohwi.data(), ohwi.size());
    weights = tables_.add_tensor(kernel_name, ohwi_shape, tfl::TensorType_INT8, buffer, tables_.quantization(kq, 0), false);
  }
  const int32_t output_shape = tables_.add_int32_constant(
      node.at("name").get<std::string>() + "/output_shape",
      {1, static_cast<int32_t>(out[0]), static_cast<int32_t>(out[1]), static_cast<int32_t>(out[2])});
  const int32_t bias = bias_tensor(node, out[2]);
  const int32_t x = value(node, 0);
  const auto act = fused_activation(node);
  const int32_t y = node_output(node);
  // Op versions (TFLite's table): 3 with a bias input, 4 when an activation is fused as well.
  const auto options = tfl::CreateTransposeConvOptions(fbb(), padding, static_cast<int32_t>(strides.second),
                                                       static_cast<int32_t>(strides.first), act);
  tables_.add_op(tfl::BuiltinOperator_TRANSPOSE_CONV, act == tfl::ActivationFunctionType_NONE ? 3 : 4,
                 {output_shape, weights, x, bias}, {y}, tfl::BuiltinOptions_TransposeConvOptions, options.Union());
}

// half_pixel_centers, as the IR's resize samples (tf.image.resize's default); version 3 is the table's for it.
// Full integer: the output keeps the input's parameters (the quantizer passes them through), as TFLite requires.
void ModelWriter::resize(const json& node) {
  const Shape out = checked_shape(node.at("shape"), describe(node));
  if (out.size() != 3) fail(describe(node) + ": resize needs an [H, W, C] output, got " + shape_text(out));
  const std::string how = node.at("attrs").value("interpolation", std::string("bilinear"));
  const int32_t x = value(node, 0);
  const int32_t size = tables_.add_int32_constant(node.at("name").get<std::string>() + "/size",
                                                  {static_cast<int32_t>(out[0]), static_cast<int32_t>(out[1])});
  const int32_t y = node_output(node);
  if (how == "bilinear")
    tables_.add_op(tfl::BuiltinOperator_RESIZE_BILINEAR, 3, {x, size}, {y}, tfl::BuiltinOptions_ResizeBilinearOptions,
                   tfl::CreateResizeBilinearOptions(fbb(), false, true).Union());
  else if (how == "nearest")
    tables_.add_op(tfl::BuiltinOperator_RESIZE_NEAREST_NEIGHBOR, 3, {x, size}, {y},
                   tfl::BuiltinOptions_ResizeNearestNeighborOptions,
                   tfl::CreateResizeNearestNeighborOptions(fbb(), false, true).Union());
  else fail(describe(node) + ": interpolation '" + how + "' has no TFLite form (nearest, bilinear)");
}

}  // namespace tflite_plugin::writer
