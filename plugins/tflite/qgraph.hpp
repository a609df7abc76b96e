// Small helpers over the graph IR / qgraph JSON (docs/quantized-graph.md) shared by the quantizer and exporter.
#pragma once

#include <ramjet/sdk.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tflite_plugin {

using nlohmann::json;
using Shape = std::vector<int64_t>;

int64_t product(const Shape& shape);
std::string shape_text(const Shape& shape);

// A float parameter the rewrites may change (batch-norm folding) before it is quantized.
struct FloatTensor {
  Shape shape;
  std::vector<float> values;
};
using FloatParams = std::map<std::string, FloatTensor>;

// Copies every parameter the graph names (ir["params"]) out of `params`: float32, the declared shape.
FloatParams read_float_params(const json& graph, ramjet::Example& params, const std::string& where);

// The node named `name`, or null.
json* find_node(json& graph, const std::string& name);
const json* find_node(const json& graph, const std::string& name);
// Indices of the nodes that read `name`.
std::vector<size_t> consumers(const json& graph, const std::string& name);
bool is_graph_output(const json& graph, const std::string& name);
// Every reference to `from` (node inputs, graph outputs, the loss input) now names `to`.
void rewire(json& graph, const std::string& from, const std::string& to);

// A node's activation attribute ("linear" when absent).
std::string activation_of(const json& node);

// "layer 'x' (op y)" for messages.
std::string describe(const json& node);

// One entry of qgraph["quantization"]["tensors"].
struct TensorQuant {
  std::string dtype;  // "int8" | "int32"
  std::vector<float> scale;
  std::vector<int64_t> zero_point;
  int axis = -1;  // per-channel axis in the IR layout, -1 for per-tensor

  json to_json() const;
  static TensorQuant from_json(const json& entry, const std::string& name);
};

// A host-allocated tensor with a copy of `values`.
template <class T>
ramjet::Tensor make_tensor(const Shape& shape, const std::vector<T>& values) {
  ramjet::Tensor t = ramjet::Tensor::zeros(ramjet::dtype_of<T>(), std::span<const int64_t>(shape.data(), shape.size()));
  std::copy(values.begin(), values.end(), t.data<T>());
  return t;
}

}  // namespace tflite_plugin
