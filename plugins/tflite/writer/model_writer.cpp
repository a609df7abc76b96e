#include "writer/model_writer.hpp"

#include "writer/assembly.hpp"

namespace tflite_plugin::writer {

ModelWriter::ModelWriter(const json& qgraph, ramjet::Example& params) : graph_(qgraph), params_(params) {
  check_numbers(graph_);
  const json& q = graph_.at("quantization");
  const std::string mode = q.value("mode", std::string("?"));
  if (mode != "full_integer" && mode != "dynamic_range")
    fail("quantization mode '" + mode + "' cannot be exported (full_integer, dynamic_range)");
  float_activations_ = mode == "dynamic_range";
  input_type_ = q.value("input_type", std::string(float_activations_ ? "float32" : "int8"));
  output_type_ = q.value("output_type", std::string(float_activations_ ? "float32" : "int8"));
  // Dynamic range keeps every activation float32: there are no activation parameters for another interface.
  if (float_activations_ && (input_type_ != "float32" || output_type_ != "float32"))
    fail("a dynamic_range qgraph has a float32 interface only (input_type '" + input_type_ + "', output_type '" +
         output_type_ + "')");
}

std::string ModelWriter::build() {
  for (const auto& input : graph_.at("inputs")) add_input(input);
  for (const auto& node : graph_.at("nodes")) add_node(node);
  for (const auto& output : graph_.at("outputs")) add_output(output.get<std::string>());
  const char* description = float_activations_ ? "ramjet dynamic-range int8 export" : "ramjet int8 export";
  return assemble_model(tables_, inputs_, outputs_, graph_.dump(), description);
}

void ModelWriter::add_node(const json& node) {
  try {
    add_known_node(node);
  } catch (const json::exception& e) {
    // A field missing or of the wrong type: say which node, in words rather than the JSON library's codes.
    fail(describe(node) + ": malformed node: " + json_problem(e));
  }
}

void ModelWriter::add_known_node(const json& node) {
  const std::string op = node.at("op");
  if (op == "conv2d") conv2d(node);
  else if (op == "dense") dense(node);
  else if (op == "max_pool" || op == "avg_pool") pool(node);
  else if (op == "global_avg_pool" || op == "global_max_pool") global_pool(node);
  else if (op == "flatten" || op == "reshape") reshape(node);
  else if (op == "softmax") softmax(node);
  else if (op == "add") add(node);
  else if (op == "concat") concat(node);
  else if (op == "activation") activation(node);
  else if (op == "conv2d_transpose") conv2d_transpose(node);
  else if (op == "resize") resize(node);
  else if (op == "zero_padding2d") zero_padding2d(node);
  else if (op == "cropping2d") cropping2d(node);
  else if (op == "depth_to_space") depth_to_space(node);
  else fail(describe(node) + (float_activations_ ? " has no TFLite form here" : " has no TFLite int8 form"));
}

}  // namespace tflite_plugin::writer
