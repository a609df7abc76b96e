#include "writer/model_writer.hpp"

namespace tflite_plugin::writer {

void ModelWriter::pool(const json& node) {
  const Shape& in = shape_of(node.at("inputs").at(0));
  const auto window = pair_attr(node, "pool", 2);
  const auto strides = pair_attr(node, "strides", window.first);
  const tfl::Padding padding = padding_of(node, in, window, strides, {1, 1});
  const int32_t x = value(node, 0);
  const int32_t y = node_output(node);
  const auto options = tfl::CreatePool2DOptions(fbb(), padding, static_cast<int32_t>(strides.second),
                                                static_cast<int32_t>(strides.first), static_cast<int32_t>(window.second),
                                                static_cast<int32_t>(window.first));
  const bool max = node.at("op") == "max_pool";
  tables_.add_op(max ? tfl::BuiltinOperator_MAX_POOL_2D : tfl::BuiltinOperator_AVERAGE_POOL_2D, plain_op_version(), {x},
                 {y}, tfl::BuiltinOptions_Pool2DOptions, options.Union());
}

// A pool over the whole H×W window to [1, 1, 1, C], then a reshape to [1, C]: both keep their input's
// parameters, as the contract asks, and every reader of the file knows both ops.
void ModelWriter::global_pool(const json& node) {
  const std::string name = node.at("name");
  const Shape& in = shape_of(node.at("inputs").at(0));
  if (in.size() != 3) fail(describe(node) + ": needs an [H, W, C] input, got " + shape_text(in));
  const int32_t x = value(node, 0);
  const int32_t pooled = add_value_tensor(name + "/pool", {1, 1, in[2]}, name);
  const auto h = static_cast<int32_t>(in[0]), w = static_cast<int32_t>(in[1]);
  const auto options = tfl::CreatePool2DOptions(fbb(), tfl::Padding_VALID, 1, 1, w, h);
  const bool max = node.at("op") == "global_max_pool";
  tables_.add_op(max ? tfl::BuiltinOperator_MAX_POOL_2D : tfl::BuiltinOperator_AVERAGE_POOL_2D, plain_op_version(), {x},
                 {pooled}, tfl::BuiltinOptions_Pool2DOptions, options.Union());
  reshape_to(node, pooled, checked_shape(node.at("shape"), describe(node)));
}

}  // namespace tflite_plugin::writer
