#include "rewrite.hpp"

#include <cmath>

namespace tflite_plugin {
namespace {

bool is_weighted(const json& node) {
  const std::string op = node.at("op");
  return op == "conv2d" || op == "dense";
}

// The producer node of `node`'s single input, when `node` may be merged into it: the producer is a node (not a
// graph input), `node` is its only reader, and its output is not a graph output.
json* sole_producer(json& graph, const json& node) {
  if (node.at("inputs").size() != 1) return nullptr;
  const std::string input = node["inputs"][0];
  json* producer = find_node(graph, input);
  if (producer == nullptr || consumers(graph, input).size() != 1 || is_graph_output(graph, input)) return nullptr;
  return producer;
}

void erase_node(json& graph, const std::string& name) {
  json& nodes = graph.at("nodes");
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].at("name") == name) {
      nodes.erase(i);
      return;
    }
}

void inherit_range(Rewritten& r, const std::string& survivor, const std::string& removed) {
  r.range_source[survivor] = r.range_of(removed);
}

// The node's bias, created as zeros (and named <node>/bias) when it has none.
FloatTensor& bias_of(json& graph, json& node, FloatParams& params, int64_t channels) {
  json& node_params = node["params"];
  if (!node_params.contains("bias")) {
    const std::string name = node.at("name").get<std::string>() + "/bias";
    node_params["bias"] = name;
    node["attrs"]["use_bias"] = true;
    graph["params"][name] = {{"shape", {channels}}, {"init", "zeros"}, {"fan_in", 0}, {"fan_out", 0}};
    params[name] = FloatTensor{{channels}, std::vector<float>(static_cast<size_t>(channels), 0.0f)};
  }
  return params.at(node_params["bias"].get<std::string>());
}

// batch_norm(x) = gamma · (x − mean) / sqrt(var + eps) + beta, per output channel (the kernel's last axis):
// kernel[..., c] ×= s[c] and bias[c] = (bias[c] − mean[c]) · s[c] + beta[c], with s = gamma / sqrt(var + eps).
void fold_batch_norm(json& graph, json& producer, const json& bn, FloatParams& params) {
  const json& roles = bn.at("params");
  const auto& gamma = params.at(roles.at("gamma").get<std::string>()).values;
  const auto& beta = params.at(roles.at("beta").get<std::string>()).values;
  const auto& mean = params.at(roles.at("moving_mean").get<std::string>()).values;
  const auto& var = params.at(roles.at("moving_variance").get<std::string>()).values;
  const double eps = bn.at("attrs").value("epsilon", 1e-3);
  FloatTensor& kernel = params.at(producer.at("params").at("kernel").get<std::string>());
  const auto channels = static_cast<size_t>(kernel.shape.back());
  if (gamma.size() != channels)
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, describe(bn) + ": has " + std::to_string(gamma.size()) +
                                                         " channels, " + describe(producer) + " has " +
                                                         std::to_string(channels));
  std::vector<double> s(channels);
  for (size_t c = 0; c < channels; ++c) s[c] = gamma[c] / std::sqrt(static_cast<double>(var[c]) + eps);
  for (size_t i = 0; i < kernel.values.size(); ++i) kernel.values[i] = static_cast<float>(kernel.values[i] * s[i % channels]);
  FloatTensor& bias = bias_of(graph, producer, params, static_cast<int64_t>(channels));
  for (size_t c = 0; c < channels; ++c)
    bias.values[c] = static_cast<float>((static_cast<double>(bias.values[c]) - mean[c]) * s[c] + beta[c]);
  for (const auto& [role, name] : roles.items()) {
    (void)role;
    params.erase(name.get<std::string>());
    graph["params"].erase(name.get<std::string>());
  }
}

}  // namespace

Rewritten rewrite_for_inference(json graph, FloatParams& params) {
  Rewritten r;
  // 1. Identities: dropout (inference) and linear activation nodes.
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& node : graph.at("nodes")) {
      const bool identity = node.at("op") == "dropout" || (node.at("op") == "activation" && activation_of(node) == "linear");
      if (!identity || node.at("inputs").size() != 1) continue;
      const std::string name = node.at("name"), input = node["inputs"][0];
      rewire(graph, name, input);
      erase_node(graph, name);
      changed = true;
      break;
    }
  }
  // 2. batch_norm folded into the conv2d/dense before it.
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& node : graph.at("nodes")) {
      if (node.at("op") != "batch_norm") continue;
      json* producer = sole_producer(graph, node);
      if (producer == nullptr || !is_weighted(*producer) || activation_of(*producer) != "linear") continue;
      const json bn = node;
      const std::string survivor = producer->at("name");
      fold_batch_norm(graph, *producer, bn, params);
      inherit_range(r, survivor, bn.at("name"));
      rewire(graph, bn.at("name"), survivor);
      erase_node(graph, bn.at("name"));
      changed = true;
      break;
    }
  }
  // 3. relu/relu6 fused into the conv2d/dense/add before it.
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& node : graph.at("nodes")) {
      const std::string act = activation_of(node);
      if (node.at("op") != "activation" || (act != "relu" && act != "relu6")) continue;
      json* producer = sole_producer(graph, node);
      if (producer == nullptr || (!is_weighted(*producer) && producer->at("op") != "add") ||
          activation_of(*producer) != "linear")
        continue;
      const std::string name = node.at("name"), survivor = producer->at("name");
      (*producer)["attrs"]["activation"] = act;
      inherit_range(r, survivor, name);
      rewire(graph, name, survivor);
      erase_node(graph, name);
      changed = true;
      break;
    }
  }
  r.graph = std::move(graph);
  return r;
}

}  // namespace tflite_plugin
