// Walks a qgraph (docs/quantized-graph.md) in order and emits its TFLite tensors and operators into Tables.
// The members are defined by job:
//   model_writer.cpp     the mode and interface types, the node dispatch, the finished model
//   values.cpp           graph values: the tensor each lives in, its shape and quantization parameters
//   constants.cpp        parameters read from the Example, bias tensors
//   edges.cpp            the interface, with QUANTIZE/DEQUANTIZE for uint8/float32 in full integer
//   ops_conv_dense.cpp   CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED and their int8 kernels
//   ops_pool.cpp         MAX_POOL_2D, AVERAGE_POOL_2D, global pools
//   ops_shape.cpp        RESHAPE (flatten, reshape), CONCATENATION
//   ops_elementwise.cpp  ADD, SOFTMAX, RELU, RELU6
//   ops_upsampling.cpp   TRANSPOSE_CONV, RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR
//   ops_image_shape.cpp  PAD (zero_padding2d), SLICE (cropping2d), DEPTH_TO_SPACE
#pragma once

#include "qgraph.hpp"
#include "writer/node_options.hpp"
#include "writer/tables.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tflite_plugin::writer {

class ModelWriter {
 public:
  // Checks the qgraph's mode and interface types; throws for what cannot be exported.
  ModelWriter(const json& qgraph, ramjet::Example& params);

  // The model's bytes; call once.
  std::string build();

 private:
  flatbuffers::FlatBufferBuilder& fbb() { return tables_.builder(); }

  // ---- graph values (values.cpp) ----
  TensorQuant quant_of(const std::string& name) const;
  // The tensor of the node's i-th input, which an earlier node or the interface must have produced.
  int32_t value(const json& node, size_t i) const;
  // The shape of a value an earlier node or the interface produced; a qgraph naming any other is refused.
  const Shape& shape_of(const std::string& name) const {
    const auto it = shapes_.find(name);
    if (it == shapes_.end()) fail("value '" + name + "' is read before any input or earlier node produces it");
    return it->second;
  }
  // An activation tensor: batch 1 in the shape, -1 in the signature (LiteRT resizes).
  int32_t add_activation(const std::string& name, const Shape& per_example, tfl::TensorType type, const TensorQuant* q,
                         int64_t zp_shift = 0);
  // The tensor a graph value lives in: int8 with its parameters (full integer), or float32 (dynamic range).
  int32_t add_value_tensor(const std::string& name, const Shape& per_example, const std::string& quant_name);
  // The tensor a node writes, recorded as the node's value.
  int32_t node_output(const json& node);
  // Element-wise and pooling ops: version 2 is their int8 kernel, version 1 the float one.
  int32_t plain_op_version() const { return float_activations_ ? 1 : 2; }

  // ---- constants (constants.cpp) ----
  // The parameter's values, checked to be a contiguous tensor of `count` T.
  template <class T>
  const T* param_data(const std::string& name, const json& node, size_t count);
  int32_t bias_tensor(const json& node, int64_t channels);
  int32_t float_bias_tensor(const json& node, int64_t channels);

  // ---- the interface (edges.cpp) ----
  void add_input(const json& input);
  void add_output(const std::string& name);

  // ---- operators, one family per file ----
  void add_node(const json& node);  // model_writer.cpp
  void add_known_node(const json& node);
  void conv2d(const json& node);
  void dense(const json& node);
  TensorQuant kernel_quant(const json& node, const std::string& kernel_name) const;
  void pool(const json& node);
  void global_pool(const json& node);
  void reshape(const json& node);
  void reshape_to(const json& node, int32_t x, const Shape& per_example);
  void concat(const json& node);
  void add(const json& node);
  void softmax(const json& node);
  void activation(const json& node);
  void conv2d_transpose(const json& node);  // ops_upsampling.cpp
  void resize(const json& node);
  void zero_padding2d(const json& node);
  void cropping2d(const json& node);
  void depth_to_space(const json& node);

  const json& graph_;
  ramjet::Example& params_;
  bool float_activations_ = false;  // dynamic range: float32 activations, int8 conv/dense weights only
  std::string input_type_, output_type_;
  Tables tables_;
  std::vector<int32_t> inputs_, outputs_;  // the subgraph's interface tensors
  std::map<std::string, int32_t> values_;  // graph value → the tensor it lives in
  std::map<std::string, Shape> shapes_;    // graph value → per-example shape
};

template <class T>
const T* ModelWriter::param_data(const std::string& name, const json& node, size_t count) {
  DLTensor* t = params_.find(name);
  if (t == nullptr) fail(describe(node) + ": parameter '" + name + "' is missing");
  if (!ramjet::same_dtype(t->dtype, ramjet::dtype_of<T>()) || !ramjet::is_contiguous(*t) ||
      ramjet::element_count(*t) != static_cast<int64_t>(count))
    fail(describe(node) + ": parameter '" + name + "' must be a contiguous " + ramjet::dtype_name(ramjet::dtype_of<T>()) +
         " tensor of " + std::to_string(count) + " values");
  return ramjet::data_as<T>(*t);
}

}  // namespace tflite_plugin::writer
