#include "writer/model_writer.hpp"

namespace tflite_plugin::writer {

// The graph keeps int8 inside; a uint8 or float32 input becomes int8 through a QUANTIZE (uint8 as the same
// parameters with the zero point moved by 128).
void ModelWriter::add_input(const json& input) {
  const std::string name = input.at("name");
  const Shape shape = checked_shape(input.at("shape"), "graph input");
  shapes_[name] = shape;
  if (float_activations_) {
    values_[name] = add_activation(name, shape, tfl::TensorType_FLOAT32, nullptr);
    inputs_.push_back(values_[name]);
    return;
  }
  const TensorQuant q = quant_of(name);
  if (input_type_ == "int8") {
    values_[name] = add_activation(name, shape, tfl::TensorType_INT8, &q);
    inputs_.push_back(values_[name]);
    return;
  }
  const int32_t outer = input_type_ == "uint8" ? add_activation(name, shape, tfl::TensorType_UINT8, &q, 128)
                                               : add_activation(name, shape, tfl::TensorType_FLOAT32, nullptr);
  const int32_t inner = add_activation(name + "/int8", shape, tfl::TensorType_INT8, &q);
  tables_.add_op(tfl::BuiltinOperator_QUANTIZE, 2, {outer}, {inner}, tfl::BuiltinOptions_QuantizeOptions,
                 tfl::CreateQuantizeOptions(fbb()).Union());
  inputs_.push_back(outer);
  values_[name] = inner;
}

// The mirror of add_input: QUANTIZE to a uint8 output, DEQUANTIZE to a float32 one.
void ModelWriter::add_output(const std::string& name) {
  auto it = values_.find(name);
  if (it == values_.end()) fail("graph output '" + name + "' is not produced by any node");
  if (float_activations_ || output_type_ == "int8") {
    outputs_.push_back(it->second);
    return;
  }
  const TensorQuant q = quant_of(name);
  if (output_type_ == "uint8") {
    const int32_t outer = add_activation(name, shape_of(name), tfl::TensorType_UINT8, &q, 128);
    tables_.add_op(tfl::BuiltinOperator_QUANTIZE, 2, {it->second}, {outer}, tfl::BuiltinOptions_QuantizeOptions,
                   tfl::CreateQuantizeOptions(fbb()).Union());
    outputs_.push_back(outer);
  } else {
    const int32_t outer = add_activation(name, shape_of(name), tfl::TensorType_FLOAT32, nullptr);
    tables_.add_op(tfl::BuiltinOperator_DEQUANTIZE, 2, {it->second}, {outer}, tfl::BuiltinOptions_DequantizeOptions,
                   tfl::CreateDequantizeOptions(fbb()).Union());
    outputs_.push_back(outer);
  }
}

}  // namespace tflite_plugin::writer
