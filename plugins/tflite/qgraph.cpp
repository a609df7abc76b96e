#include "qgraph.hpp"

#include <algorithm>

namespace tflite_plugin {

int64_t product(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_text(const Shape& shape) {
  std::string t = "[";
  for (size_t i = 0; i < shape.size(); ++i) t += (i ? ", " : "") + std::to_string(shape[i]);
  return t + "]";
}

FloatParams read_float_params(const json& graph, ramjet::Example& params, const std::string& where) {
  FloatParams out;
  if (!graph.contains("params")) return out;
  for (const auto& [name, spec] : graph.at("params").items()) {
    DLTensor* t = params.find(name);
    if (t == nullptr)
      throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, where + ": parameter '" + name + "' is missing from the parameters");
    if (!ramjet::same_dtype(t->dtype, ramjet::dtype_of<float>()) || !ramjet::is_contiguous(*t))
      throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, where + ": parameter '" + name +
                                                           "' must be a contiguous float32 tensor, got " +
                                                           ramjet::dtype_name(t->dtype));
    FloatTensor f;
    f.shape.assign(t->shape, t->shape + t->ndim);
    const Shape declared = spec.at("shape").get<Shape>();
    if (f.shape != declared)
      throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, where + ": parameter '" + name + "' has shape " +
                                                           shape_text(f.shape) + ", the graph declares " +
                                                           shape_text(declared));
    const float* data = ramjet::data_as<float>(*t);
    f.values.assign(data, data + product(f.shape));
    out.emplace(name, std::move(f));
  }
  return out;
}

json* find_node(json& graph, const std::string& name) {
  for (auto& node : graph.at("nodes"))
    if (node.at("name") == name) return &node;
  return nullptr;
}

const json* find_node(const json& graph, const std::string& name) {
  for (const auto& node : graph.at("nodes"))
    if (node.at("name") == name) return &node;
  return nullptr;
}

std::vector<size_t> consumers(const json& graph, const std::string& name) {
  std::vector<size_t> out;
  const json& nodes = graph.at("nodes");
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const auto& input : nodes[i].at("inputs"))
      if (input == name) {
        out.push_back(i);
        break;
      }
  return out;
}

bool is_graph_output(const json& graph, const std::string& name) {
  const json& outputs = graph.at("outputs");
  return std::find(outputs.begin(), outputs.end(), json(name)) != outputs.end();
}

void rewire(json& graph, const std::string& from, const std::string& to) {
  for (auto& node : graph.at("nodes"))
    for (auto& input : node.at("inputs"))
      if (input == from) input = to;
  for (auto& output : graph.at("outputs"))
    if (output == from) output = to;
  if (graph.contains("loss") && graph["loss"].value("input", std::string()) == from) graph["loss"]["input"] = to;
}

std::string activation_of(const json& node) {
  if (!node.contains("attrs") || !node["attrs"].contains("activation") || node["attrs"]["activation"].is_null())
    return "linear";
  return node["attrs"]["activation"].get<std::string>();
}

std::string describe(const json& node) {
  return "layer '" + node.value("name", std::string("?")) + "' (op " + node.value("op", std::string("?")) + ")";
}

json TensorQuant::to_json() const {
  json j = {{"dtype", dtype}, {"scale", scale}, {"zero_point", zero_point}};
  if (axis >= 0) j["axis"] = axis;
  return j;
}

TensorQuant TensorQuant::from_json(const json& entry, const std::string& name) {
  TensorQuant q;
  try {
    q.dtype = entry.at("dtype").get<std::string>();
    q.scale = entry.at("scale").get<std::vector<float>>();
    q.zero_point = entry.at("zero_point").get<std::vector<int64_t>>();
    q.axis = entry.value("axis", -1);
  } catch (const json::exception& e) {
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "qgraph: quantization of tensor '" + name + "': " + e.what());
  }
  if (q.scale.empty() || q.scale.size() != q.zero_point.size())
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "qgraph: quantization of tensor '" + name +
                                                         "' needs as many scales as zero points (at least one)");
  for (float s : q.scale)
    if (!(s > 0))
      throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "qgraph: tensor '" + name + "' has a non-positive scale");
  return q;
}

}  // namespace tflite_plugin
