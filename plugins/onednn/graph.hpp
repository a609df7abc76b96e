// The graph IR the core hands to compile(), parsed and checked for structure: names defined once, inputs defined
// before use (topological order), parameters declared, shapes present. Per-op attributes and shapes are checked
// by each layer when it is built.
#pragma once

#include "common.hpp"

#include <map>
#include <optional>

namespace onednn {

struct TensorSpec {
  std::string name;
  Shape shape;
  dt dtype = dt::f32;  // graph inputs may be int32 (token IDs, read by embeddings); everything else is float32
};

// A conv2d node's attributes, checked against its input [H, W, C], and the output size they give.
struct ConvGeometry {
  int64_t H = 0, W = 0, C = 0, F = 0, G = 1, OH = 0, OW = 0;
  std::vector<int64_t> kernel, strides, padding, dilation;  // padding: top, bottom, left, right
};

struct NodeSpec;
ConvGeometry conv_geometry(const NodeSpec& node, const Shape& input);
// A conv1d node's, as the same convolution on its sequence [T, C] seen as a one-row image [1, T, C].
ConvGeometry conv1d_geometry(const NodeSpec& node, const Shape& input);

struct NodeSpec {
  std::string name;
  std::string op;
  size_t index = 0;  // position in "nodes"
  std::vector<std::string> inputs;
  Shape shape;  // per example
  nlohmann::json attrs = nlohmann::json::object();
  std::map<std::string, std::string> params;  // role ("kernel", "bias") -> parameter name

  // "node 'conv2d' (#/nodes/0, op conv2d)" for messages.
  std::string where() const;
  [[noreturn]] void fail(ramjet_status status, const std::string& message) const;
  // The per-example shape a flatten or reshape node makes of `input` (reshape's one -1 inferred); fails naming
  // the node when the attribute is malformed or the element counts differ.
  Shape reshape_target(const Shape& input) const;

  // Attributes; a missing optional one takes `fallback`. Wrong types and bad values throw INVALID_ARGUMENT.
  bool has(const char* key) const { return attrs.contains(key); }
  int64_t attr_int(const char* key) const;
  int64_t attr_int(const char* key, int64_t fallback) const;
  double attr_number(const char* key, double fallback) const;
  bool attr_bool(const char* key, bool fallback) const;
  std::string attr_string(const char* key, const std::string& fallback) const;
  // An int or an array of `count` ints ([kh, kw] from 3 means [3, 3]).
  std::vector<int64_t> attr_ints(const char* key, size_t count, const std::vector<int64_t>& fallback) const;
  std::vector<int64_t> attr_ints(const char* key, size_t count) const;
  // The parameter bound to `role`; throws when the node has none.
  const std::string& param(const char* role) const;
};

struct LossSpec {
  std::string op;      // sparse_softmax_cross_entropy, categorical_cross_entropy, binary_cross_entropy, mse, l1
  std::string input;   // the value the loss reads (logits for the cross-entropies)
  std::string labels;  // name of the labels tensor among forward's inputs
  std::optional<int64_t> ignore_label;  // sparse cross-entropy: positions with this label count for nothing
  double label_smoothing = 0.0;         // the cross-entropies over classes
};

struct Graph {
  std::vector<TensorSpec> inputs;
  std::vector<NodeSpec> nodes;
  std::vector<std::string> outputs;
  std::optional<LossSpec> loss;
  std::vector<TensorSpec> params;  // in the order of the graph's "params" object
};

// Throws ramjet::Error: INVALID_ARGUMENT for malformed graphs, UNSUPPORTED for ops or dtypes this backend lacks.
Graph parse_graph(const nlohmann::json& graph);

}  // namespace onednn
