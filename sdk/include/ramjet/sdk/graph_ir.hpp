// The graph IR a backend's compile() receives (docs/graph-ir.md), read and checked for structure: names defined
// once, inputs defined before use (topological order), parameters declared, shapes present, and only the ops and
// losses the backend names. Per-op attributes and shapes are each backend's to check when it builds a layer; the
// accessors here give every backend the same words for a missing or mistyped attribute.
//
// Header-only, like the rest of the SDK: a backend built out of tree reads the IR with the same rules as ours.
#ifndef RAMJET_SDK_GRAPH_IR_HPP
#define RAMJET_SDK_GRAPH_IR_HPP

#include <ramjet/abi.h>
#include <ramjet/sdk/error.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ramjet::ir {

using Shape = std::vector<int64_t>;  // per example, channels last

inline int64_t product(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

inline std::string shape_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

struct TensorSpec {
  std::string name;
  Shape shape;
  DLDataType dtype{kDLFloat, 32, 1};  // graph inputs may be int32 (token IDs, read by embeddings)
};

// A conv2d node's attributes, checked against its input [H, W, C], and the output size they give.
struct ConvGeometry {
  int64_t H = 0, W = 0, C = 0, F = 0, G = 1, OH = 0, OW = 0;
  std::vector<int64_t> kernel, strides, padding, dilation;  // padding: top, bottom, left, right
};

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

ConvGeometry conv_geometry(const NodeSpec& node, const Shape& input);

// A pooling node's window on its input [H, W, C]: Keras's pool size, strides (the pool size when absent) and
// padding (top, bottom, left, right), checked; `global`: the whole image. OH, OW: the output's size.
struct PoolGeometry {
  int64_t H = 0, W = 0, C = 0, OH = 1, OW = 1;
  std::vector<int64_t> kernel, strides{1, 1}, padding{0, 0, 0, 0};
};
PoolGeometry pool_geometry(const NodeSpec& node, const Shape& input, bool global);

// A backend's table of ops (name → the factory of its layer): the factory of `op`, or a null one; the names.
template <class Factory, size_t N>
Factory find_op(const std::pair<std::string_view, Factory> (&table)[N], std::string_view op) {
  for (const auto& [name, factory] : table)
    if (name == op) return factory;
  return Factory{};
}
template <class Factory, size_t N>
std::vector<std::string> op_names(const std::pair<std::string_view, Factory> (&table)[N]) {
  std::vector<std::string> names;
  for (const auto& entry : table) names.emplace_back(entry.first);
  return names;
}
// A conv1d node's, as the same convolution on its sequence [T, C] seen as a one-row image [1, T, C].
ConvGeometry conv1d_geometry(const NodeSpec& node, const Shape& input);

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

// What a backend runs, in its own words: its name as messages say it ("onednn cpu backend"), its ops and losses.
struct Capabilities {
  std::string name;
  std::vector<std::string> ops;
  std::vector<std::string> losses;
};

// Throws ramjet::Error: INVALID_ARGUMENT for malformed graphs, UNSUPPORTED for ops, losses or dtypes `backend`
// lacks.
Graph parse_graph(const nlohmann::json& graph, const Capabilities& backend);

namespace detail {

[[noreturn]] inline void invalid(const std::string& message) {
  throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "graph: " + message);
}

inline const nlohmann::json& field(const nlohmann::json& object, const char* key, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end()) invalid(where + ": field '" + key + "' is missing");
  return *it;
}

inline std::string string_field(const nlohmann::json& object, const char* key, const std::string& where) {
  const auto& v = field(object, key, where);
  if (!v.is_string() || v.get<std::string>().empty()) invalid(where + ": '" + key + "' must be a non-empty string");
  return v.get<std::string>();
}

inline Shape shape_field(const nlohmann::json& object, const std::string& where) {
  const auto& v = field(object, "shape", where);
  if (!v.is_array()) invalid(where + ": 'shape' must be an array of positive integers");
  Shape shape;
  for (const auto& d : v) {
    if (!d.is_number_integer() || d.get<int64_t>() <= 0)
      invalid(where + ": 'shape' must be an array of positive integers, got " + v.dump());
    shape.push_back(d.get<int64_t>());
  }
  return shape;
}

inline void check_dtype(const nlohmann::json& object, const std::string& where, const char* wanted,
                        const std::string& backend) {
  auto it = object.find("dtype");
  if (it == object.end()) return;
  if (!it->is_string()) invalid(where + ": 'dtype' must be a string");
  if (it->get<std::string>() != wanted)
    throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, "graph: " + where + ": dtype '" + it->get<std::string>() +
                                                    "' is not supported by the " + backend + " (it needs " + wanted +
                                                    ")");
}

inline std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : ", ") + w;
  return out;
}

}  // namespace detail

inline std::string NodeSpec::where() const {
  return "node '" + name + "' (#/nodes/" + std::to_string(index) + ", op " + op + ")";
}

inline void NodeSpec::fail(ramjet_status status, const std::string& message) const {
  throw ramjet::Error(status, "graph: " + where() + ": " + message);
}

inline ConvGeometry conv_geometry(const NodeSpec& node, const Shape& input) {
  if (input.size() != 3) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "conv2d needs an image [H, W, C] input, got " + shape_string(input));
  ConvGeometry g;
  g.H = input[0], g.W = input[1], g.C = input[2];
  g.F = node.attr_int("filters");
  g.kernel = node.attr_ints("kernel", 2);
  g.strides = node.attr_ints("strides", 2, {1, 1});
  g.padding = node.attr_ints("padding", 4, {0, 0, 0, 0});
  g.dilation = node.attr_ints("dilation", 2, {1, 1});
  g.G = node.attr_int("groups", 1);
  const auto& k = g.kernel;
  const auto& s = g.strides;
  const auto& d = g.dilation;
  const auto& pad = g.padding;
  if (g.F < 1 || k[0] < 1 || k[1] < 1 || s[0] < 1 || s[1] < 1 || d[0] < 1 || d[1] < 1 || g.G < 1 ||
      *std::min_element(pad.begin(), pad.end()) < 0)
    node.fail(RAMJET_ERR_INVALID_ARGUMENT, "filters, kernel, strides, dilation and groups must be >= 1, padding >= 0");
  if (g.C % g.G != 0 || g.F % g.G != 0)
    node.fail(RAMJET_ERR_INVALID_ARGUMENT, "groups (" + std::to_string(g.G) + ") must divide the input channels (" +
                                               std::to_string(g.C) + ") and filters (" + std::to_string(g.F) + ")");
  const int64_t span_h = (k[0] - 1) * d[0] + 1, span_w = (k[1] - 1) * d[1] + 1;
  if (g.H + pad[0] + pad[1] < span_h || g.W + pad[2] + pad[3] < span_w)
    node.fail(RAMJET_ERR_INVALID_ARGUMENT, "the (dilated) kernel is larger than the padded input " + shape_string(input));
  g.OH = (g.H + pad[0] + pad[1] - span_h) / s[0] + 1;
  g.OW = (g.W + pad[2] + pad[3] - span_w) / s[1] + 1;
  return g;
}

inline ConvGeometry conv1d_geometry(const NodeSpec& node, const Shape& input) {
  if (input.size() != 2) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "conv1d needs a sequence [T, C] input, got " + shape_string(input));
  // The same convolution on the sequence as a one-row image [1, T, C].
  NodeSpec image = node;
  const auto pad = node.attr_ints("padding", 2, {0, 0});
  image.attrs["kernel"] = {1, node.attr_int("kernel")};
  image.attrs["strides"] = {1, node.attr_int("strides", 1)};
  image.attrs["dilation"] = {1, node.attr_int("dilation", 1)};
  image.attrs["padding"] = {0, 0, pad[0], pad[1]};
  return conv_geometry(image, {1, input[0], input[1]});
}

inline PoolGeometry pool_geometry(const NodeSpec& node, const Shape& input, bool global) {
  if (input.size() != 3)
    node.fail(RAMJET_ERR_INVALID_ARGUMENT, node.op + " needs an image [H, W, C] input, got " + shape_string(input));
  PoolGeometry g;
  g.H = input[0], g.W = input[1], g.C = input[2];
  g.kernel = {g.H, g.W};
  if (global) return g;
  const auto& k = g.kernel = node.attr_ints("pool", 2);
  const auto& s = g.strides = node.attr_ints("strides", 2, k);  // Keras: strides default to the pool size
  const auto& pad = g.padding = node.attr_ints("padding", 4, {0, 0, 0, 0});
  if (k[0] < 1 || k[1] < 1 || s[0] < 1 || s[1] < 1 || *std::min_element(pad.begin(), pad.end()) < 0)
    node.fail(RAMJET_ERR_INVALID_ARGUMENT, "pool and strides must be >= 1, padding >= 0");
  if (pad[0] >= k[0] || pad[1] >= k[0] || pad[2] >= k[1] || pad[3] >= k[1])
    node.fail(RAMJET_ERR_INVALID_ARGUMENT, "padding must be smaller than the pool window");
  if (g.H + pad[0] + pad[1] < k[0] || g.W + pad[2] + pad[3] < k[1])
    node.fail(RAMJET_ERR_INVALID_ARGUMENT, "the pool window is larger than the padded input " + shape_string(input));
  g.OH = (g.H + pad[0] + pad[1] - k[0]) / s[0] + 1;
  g.OW = (g.W + pad[2] + pad[3] - k[1]) / s[1] + 1;
  return g;
}

inline Shape NodeSpec::reshape_target(const Shape& input) const {
  if (op == "flatten") return {product(input)};
  const auto it = attrs.find("shape");
  if (it == attrs.end() || !it->is_array()) fail(RAMJET_ERR_INVALID_ARGUMENT, "attribute 'shape' must be an array of integers");
  Shape shape;
  int inferred = -1;
  for (const auto& d : *it) {
    if (!d.is_number_integer() || d.get<int64_t>() == 0 || d.get<int64_t>() < -1)
      fail(RAMJET_ERR_INVALID_ARGUMENT, "attribute 'shape' must hold positive integers (or one -1), got " + it->dump());
    if (d.get<int64_t>() == -1) {
      if (inferred >= 0) fail(RAMJET_ERR_INVALID_ARGUMENT, "attribute 'shape' may hold one -1 only");
      inferred = static_cast<int>(shape.size());
    }
    shape.push_back(d.get<int64_t>());
  }
  if (inferred >= 0) {
    shape[inferred] = 1;
    if (product(input) % product(shape) != 0)
      fail(RAMJET_ERR_INVALID_ARGUMENT, "cannot reshape " + shape_string(input) + " to " + it->dump());
    shape[inferred] = product(input) / product(shape);
  }
  if (product(shape) != product(input))
    fail(RAMJET_ERR_INVALID_ARGUMENT, "cannot reshape " + shape_string(input) + " to " + shape_string(shape));
  return shape;
}

inline int64_t NodeSpec::attr_int(const char* key) const {
  if (!has(key)) fail(RAMJET_ERR_INVALID_ARGUMENT, std::string("attribute '") + key + "' is missing");
  return attr_int(key, 0);
}

inline int64_t NodeSpec::attr_int(const char* key, int64_t fallback) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  if (!it->is_number_integer()) fail(RAMJET_ERR_INVALID_ARGUMENT, std::string("attribute '") + key + "' must be an integer");
  return it->get<int64_t>();
}

inline double NodeSpec::attr_number(const char* key, double fallback) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  if (!it->is_number()) fail(RAMJET_ERR_INVALID_ARGUMENT, std::string("attribute '") + key + "' must be a number");
  return it->get<double>();
}

inline bool NodeSpec::attr_bool(const char* key, bool fallback) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  if (!it->is_boolean()) fail(RAMJET_ERR_INVALID_ARGUMENT, std::string("attribute '") + key + "' must be true or false");
  return it->get<bool>();
}

inline std::string NodeSpec::attr_string(const char* key, const std::string& fallback) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  if (!it->is_string()) fail(RAMJET_ERR_INVALID_ARGUMENT, std::string("attribute '") + key + "' must be a string");
  return it->get<std::string>();
}

inline std::vector<int64_t> NodeSpec::attr_ints(const char* key, size_t count, const std::vector<int64_t>& fallback) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  if (it->is_number_integer()) return std::vector<int64_t>(count, it->get<int64_t>());
  if (!it->is_array() || it->size() != count)
    fail(RAMJET_ERR_INVALID_ARGUMENT, std::string("attribute '") + key + "' must be an integer or an array of " +
                                          std::to_string(count) + " integers, got " + it->dump());
  std::vector<int64_t> out;
  for (const auto& v : *it) {
    if (!v.is_number_integer())
      fail(RAMJET_ERR_INVALID_ARGUMENT, std::string("attribute '") + key + "' must hold integers, got " + it->dump());
    out.push_back(v.get<int64_t>());
  }
  return out;
}

inline std::vector<int64_t> NodeSpec::attr_ints(const char* key, size_t count) const {
  if (!has(key)) fail(RAMJET_ERR_INVALID_ARGUMENT, std::string("attribute '") + key + "' is missing");
  return attr_ints(key, count, {});
}

inline const std::string& NodeSpec::param(const char* role) const {
  auto it = params.find(role);
  if (it == params.end()) fail(RAMJET_ERR_INVALID_ARGUMENT, std::string("'params' has no '") + role + "'");
  return it->second;
}

inline Graph parse_graph(const nlohmann::json& json, const Capabilities& backend) {
  if (!json.is_object()) detail::invalid("the graph must be a JSON object");
  Graph graph;
  std::set<std::string> defined;  // values defined so far: inputs, then nodes in order

  const auto& inputs = detail::field(json, "inputs", "#");
  if (!inputs.is_array() || inputs.empty()) detail::invalid("#/inputs must be a non-empty array");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string where = "#/inputs/" + std::to_string(i);
    if (!inputs[i].is_object()) detail::invalid(where + " must be an object");
    TensorSpec spec{detail::string_field(inputs[i], "name", where), detail::shape_field(inputs[i], where)};
    if (inputs[i].contains("dtype") && inputs[i]["dtype"] == "int32") spec.dtype = DLDataType{kDLInt, 32, 1};
    else detail::check_dtype(inputs[i], where, "float32", backend.name);
    if (!defined.insert(spec.name).second) detail::invalid(where + ": the name '" + spec.name + "' is used twice");
    graph.inputs.push_back(std::move(spec));
  }

  if (json.contains("params")) {
    const auto& params = json["params"];
    if (!params.is_object()) detail::invalid("#/params must be an object");
    for (const auto& [name, spec] : params.items()) {
      const std::string where = "#/params/" + name;
      if (!spec.is_object()) detail::invalid(where + " must be an object");
      detail::check_dtype(spec, where, "float32", backend.name);
      graph.params.push_back({name, detail::shape_field(spec, where)});
    }
  }
  auto declared_param = [&](const std::string& name) {
    for (const auto& p : graph.params)
      if (p.name == name) return true;
    return false;
  };

  const auto& nodes = detail::field(json, "nodes", "#");
  if (!nodes.is_array()) detail::invalid("#/nodes must be an array");
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string where = "#/nodes/" + std::to_string(i);
    const auto& n = nodes[i];
    if (!n.is_object()) detail::invalid(where + " must be an object");
    NodeSpec node;
    node.index = i;
    node.name = detail::string_field(n, "name", where);
    node.op = detail::string_field(n, "op", where + " ('" + node.name + "')");
    if (std::find(backend.ops.begin(), backend.ops.end(), node.op) == backend.ops.end())
      node.fail(RAMJET_ERR_UNSUPPORTED, "the " + backend.name + " does not support op '" + node.op + "' (it supports " +
                                            detail::joined(backend.ops) + ")");
    const auto& in = detail::field(n, "inputs", node.where());
    if (!in.is_array() || in.empty()) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "'inputs' must be a non-empty array of names");
    for (const auto& name : in) {
      if (!name.is_string()) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "'inputs' must be a non-empty array of names");
      if (!defined.count(name.get<std::string>()))
        node.fail(RAMJET_ERR_INVALID_ARGUMENT, "input '" + name.get<std::string>() +
                                                   "' is not defined by an input or an earlier node (nodes must be "
                                                   "in topological order)");
      node.inputs.push_back(name.get<std::string>());
    }
    node.shape = detail::shape_field(n, node.where());
    if (n.contains("attrs")) {
      if (!n["attrs"].is_object()) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "'attrs' must be an object");
      node.attrs = n["attrs"];
    }
    if (n.contains("params")) {
      if (!n["params"].is_object()) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "'params' must be an object");
      for (const auto& [role, name] : n["params"].items()) {
        if (!name.is_string()) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "'params/" + role + "' must be a string");
        if (!declared_param(name.get<std::string>()))
          node.fail(RAMJET_ERR_INVALID_ARGUMENT, "parameter '" + name.get<std::string>() + "' is not declared in #/params");
        node.params[role] = name.get<std::string>();
      }
    }
    if (!defined.insert(node.name).second)
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "the name '" + node.name + "' is already defined");
    graph.nodes.push_back(std::move(node));
  }

  const auto& outputs = detail::field(json, "outputs", "#");
  if (!outputs.is_array() || outputs.empty()) detail::invalid("#/outputs must be a non-empty array of names");
  for (const auto& name : outputs) {
    if (!name.is_string() || !defined.count(name.get<std::string>()))
      detail::invalid("#/outputs: " + name.dump() + " is not an input or node of the graph");
    graph.outputs.push_back(name.get<std::string>());
  }

  if (json.contains("loss") && !json["loss"].is_null()) {
    const auto& l = json["loss"];
    if (!l.is_object()) detail::invalid("#/loss must be an object");
    LossSpec loss;
    loss.op = detail::string_field(l, "op", "#/loss");
    loss.input = detail::string_field(l, "input", "#/loss");
    if (std::find(backend.losses.begin(), backend.losses.end(), loss.op) == backend.losses.end())
      throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, "graph: #/loss: the " + backend.name + " does not support loss '" +
                                                      loss.op + "' (it supports " + detail::joined(backend.losses) + ")");
    if (l.contains("ignore_label")) {
      if (!l["ignore_label"].is_number_integer()) detail::invalid("#/loss/ignore_label must be an integer");
      loss.ignore_label = l["ignore_label"].get<int64_t>();
    }
    if (l.contains("label_smoothing")) {
      if (!l["label_smoothing"].is_number() || l["label_smoothing"].get<double>() < 0 ||
          l["label_smoothing"].get<double>() >= 1)
        detail::invalid("#/loss/label_smoothing must be a number in [0, 1)");
      loss.label_smoothing = l["label_smoothing"].get<double>();
    }
    if (!defined.count(loss.input)) detail::invalid("#/loss/input: '" + loss.input + "' is not an input or node of the graph");
    const nlohmann::json* labels = json.contains("labels") ? &json["labels"] : nullptr;
    if (l.contains("labels")) loss.labels = detail::string_field(l, "labels", "#/loss");
    else if (labels != nullptr && labels->is_object()) loss.labels = detail::string_field(*labels, "name", "#/labels");
    else detail::invalid("#/loss: 'labels' names no labels tensor (and #/labels is missing)");
    if (defined.count(loss.labels)) detail::invalid("#/loss/labels: '" + loss.labels + "' is already the name of a graph tensor");
    if (labels != nullptr && labels->is_object())
      detail::check_dtype(*labels, "#/labels", loss.op == "sparse_softmax_cross_entropy" ? "int32" : "float32",
                          backend.name);
    graph.loss = std::move(loss);
  }
  return graph;
}

}  // namespace ramjet::ir

#endif  // RAMJET_SDK_GRAPH_IR_HPP
