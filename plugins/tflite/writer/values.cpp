#include "writer/model_writer.hpp"

namespace tflite_plugin::writer {

TensorQuant ModelWriter::quant_of(const std::string& name) const {
  const json& tensors = graph_.at("quantization").at("tensors");
  if (!tensors.contains(name)) fail("the qgraph has no quantization parameters for tensor '" + name + "'");
  return TensorQuant::from_json(tensors.at(name), name);
}

int32_t ModelWriter::value(const json& node, size_t i) const {
  const std::string name = node.at("inputs").at(i);
  auto it = values_.find(name);
  if (it == values_.end()) fail(describe(node) + ": input '" + name + "' is not produced before it");
  return it->second;
}

int32_t ModelWriter::add_activation(const std::string& name, const Shape& per_example, tfl::TensorType type,
                                    const TensorQuant* q, int64_t zp_shift) {
  Shape shape{1};
  shape.insert(shape.end(), per_example.begin(), per_example.end());
  return tables_.add_tensor(name, shape, type, 0, q ? tables_.quantization(*q, 0, zp_shift) : 0, true);
}

int32_t ModelWriter::add_value_tensor(const std::string& name, const Shape& per_example, const std::string& quant_name) {
  if (float_activations_) return add_activation(name, per_example, tfl::TensorType_FLOAT32, nullptr);
  const TensorQuant q = quant_of(quant_name);
  return add_activation(name, per_example, tfl::TensorType_INT8, &q);
}

// int8, suffixed "/int8" when a conversion to the file's output type follows it (edges.cpp), or float32 in
// dynamic range, where the interface needs no conversion.
int32_t ModelWriter::node_output(const json& node) {
  const std::string name = node.at("name");
  const bool converted = !float_activations_ && is_graph_output(graph_, name) && output_type_ != "int8";
  const Shape shape = checked_shape(node.at("shape"), describe(node));
  const int32_t t = add_value_tensor(converted ? name + "/int8" : name, shape, name);
  values_[name] = t;
  shapes_[name] = shape;
  return t;
}

}  // namespace tflite_plugin::writer
