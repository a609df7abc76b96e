// The ops of image-to-image models that only move values: PAD (zero_padding2d), SLICE (cropping2d) and
// DEPTH_TO_SPACE. Each keeps its input's quantization parameters (the quantizer passes them through), as TFLite's
// int8 kernels of these ops require; PAD fills with the zero point, which is real 0.
#include "writer/model_writer.hpp"

#include <array>

namespace tflite_plugin::writer {
namespace {

// An [H, W, C] input and the node's [top, bottom, left, right] attribute `key`, each in [0, 2^24].
std::array<int32_t, 4> sides(const json& node, const Shape& in, const char* key) {
  if (in.size() != 3) fail(describe(node) + ": needs an [H, W, C] input, got " + shape_text(in));
  const json& v = node.at("attrs").at(key);
  if (!v.is_array() || v.size() != 4) fail(describe(node) + ": '" + key + "' must be [top, bottom, left, right]");
  std::array<int32_t, 4> s{};
  for (size_t i = 0; i < 4; ++i) {
    if (!v[i].is_number_integer() || v[i].get<int64_t>() < 0 || v[i].get<int64_t>() > (int64_t{1} << 24))
      fail(describe(node) + ": '" + key + "' holds " + v[i].dump() + ", not a count of rows or columns");
    s[i] = static_cast<int32_t>(v[i].get<int64_t>());
  }
  return s;
}

}  // namespace

void ModelWriter::zero_padding2d(const json& node) {
  const std::string name = node.at("name");
  const auto p = sides(node, shape_of(node.at("inputs").at(0)), "padding");
  // paddings [4, 2]: (before, after) for N, H, W, C.
  const std::vector<int32_t> paddings{0, 0, p[0], p[1], p[2], p[3], 0, 0};
  const uint32_t buffer = tables_.add_buffer(paddings.data(), paddings.size() * sizeof(int32_t));
  const int32_t pads = tables_.add_tensor(name + "/paddings", {4, 2}, tfl::TensorType_INT32, buffer, 0, false);
  const int32_t x = value(node, 0);
  const int32_t y = node_output(node);
  tables_.add_op(tfl::BuiltinOperator_PAD, plain_op_version(), {x, pads}, {y}, tfl::BuiltinOptions_PadOptions,
                 tfl::CreatePadOptions(fbb()).Union());
}

void ModelWriter::cropping2d(const json& node) {
  const std::string name = node.at("name");
  const Shape& in = shape_of(node.at("inputs").at(0));
  const auto c = sides(node, in, "cropping");
  if (c[0] + c[1] >= in[0] || c[2] + c[3] >= in[1]) fail(describe(node) + ": crops away the whole input " + shape_text(in));
  // SLICE's size -1 on the batch: every example, whatever the batch LiteRT resizes to.
  const int32_t begin = tables_.add_int32_constant(name + "/begin", {0, c[0], c[2], 0});
  const int32_t size = tables_.add_int32_constant(
      name + "/size", {-1, static_cast<int32_t>(in[0]) - c[0] - c[1], static_cast<int32_t>(in[1]) - c[2] - c[3],
                       static_cast<int32_t>(in[2])});
  const int32_t x = value(node, 0);
  const int32_t y = node_output(node);
  tables_.add_op(tfl::BuiltinOperator_SLICE, plain_op_version(), {x, begin, size}, {y},
                 tfl::BuiltinOptions_SliceOptions, tfl::CreateSliceOptions(fbb()).Union());
}

void ModelWriter::depth_to_space(const json& node) {
  const Shape& in = shape_of(node.at("inputs").at(0));
  if (in.size() != 3) fail(describe(node) + ": needs an [H, W, C] input, got " + shape_text(in));
  const json& b = node.at("attrs").at("block_size");
  if (!b.is_number_integer() || b.get<int64_t>() < 2 || in[2] % (b.get<int64_t>() * b.get<int64_t>()) != 0)
    fail(describe(node) + ": block_size " + b.dump() + " does not split the " + std::to_string(in[2]) + " channels");
  const int32_t x = value(node, 0);
  const int32_t y = node_output(node);
  tables_.add_op(tfl::BuiltinOperator_DEPTH_TO_SPACE, plain_op_version(), {x}, {y},
                 tfl::BuiltinOptions_DepthToSpaceOptions,
                 tfl::CreateDepthToSpaceOptions(fbb(), static_cast<int32_t>(b.get<int64_t>())).Union());
}

}  // namespace tflite_plugin::writer
