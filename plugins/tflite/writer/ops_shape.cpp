#include "writer/model_writer.hpp"

namespace tflite_plugin::writer {

void ModelWriter::reshape(const json& node) { reshape_to(node, value(node, 0), checked_shape(node.at("shape"), describe(node))); }

// -1 for the batch, so the reshape follows a resized input.
void ModelWriter::reshape_to(const json& node, int32_t x, const Shape& per_example) {
  std::vector<int32_t> new_shape{-1};
  for (int64_t d : per_example) new_shape.push_back(static_cast<int32_t>(d));
  const int32_t shape = tables_.add_int32_constant(node.at("name").get<std::string>() + "/shape", new_shape);
  const int32_t y = node_output(node);
  // new_shape in the options too: older readers (Arm NN 20.08) take it from there.
  const auto options = tfl::CreateReshapeOptionsDirect(fbb(), &new_shape);
  tables_.add_op(tfl::BuiltinOperator_RESHAPE, 1, {x, shape}, {y}, tfl::BuiltinOptions_ReshapeOptions, options.Union());
}

// On any axis. TFLite's int8 CONCATENATION wants every input on the output's parameters: requantize the others first (float
// inputs in dynamic range go in as they are).
void ModelWriter::concat(const json& node) {
  const std::string name = node.at("name");
  const Shape shape = checked_shape(node.at("shape"), describe(node));
  // The IR counts the axis from the end (-1 the last); TFLite counts the batch as axis 0.
  const auto rank = static_cast<int64_t>(shape.size());
  const int64_t axis = node.contains("attrs") ? node["attrs"].value("axis", int64_t{-1}) : -1;
  if (axis < -rank || axis >= rank) fail(describe(node) + ": axis " + std::to_string(axis) + " is not an axis of " + shape_text(shape));
  const auto options = tfl::CreateConcatenationOptions(fbb(), static_cast<int32_t>(axis < 0 ? rank + 1 + axis : axis + 1));
  if (float_activations_) {
    std::vector<int32_t> inputs;
    for (size_t i = 0; i < node.at("inputs").size(); ++i) inputs.push_back(value(node, i));
    const int32_t y = node_output(node);
    tables_.add_op(tfl::BuiltinOperator_CONCATENATION, 1, inputs, {y}, tfl::BuiltinOptions_ConcatenationOptions,
                   options.Union());
    return;
  }
  const TensorQuant out_q = quant_of(name);
  std::vector<int32_t> inputs;
  for (size_t i = 0; i < node.at("inputs").size(); ++i) {
    const std::string input = node["inputs"][i];
    const TensorQuant in_q = quant_of(input);
    int32_t t = value(node, i);
    if (in_q.scale != out_q.scale || in_q.zero_point != out_q.zero_point) {
      const int32_t requantized =
          add_activation(input + "/requantized_for/" + name, shape_of(input), tfl::TensorType_INT8, &out_q);
      tables_.add_op(tfl::BuiltinOperator_QUANTIZE, 2, {t}, {requantized}, tfl::BuiltinOptions_QuantizeOptions,
                     tfl::CreateQuantizeOptions(fbb()).Union());
      t = requantized;
    }
    inputs.push_back(t);
  }
  const int32_t y = node_output(node);
  tables_.add_op(tfl::BuiltinOperator_CONCATENATION, 2, inputs, {y}, tfl::BuiltinOptions_ConcatenationOptions,
                 options.Union());
}

}  // namespace tflite_plugin::writer
