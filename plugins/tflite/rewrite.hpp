// Graph rewrites before quantization (docs/quantized-graph.md, "Rewrites"): dropout and identity activations
// removed, batch_norm folded into the conv2d/dense before it, relu/relu6 fused into the conv2d/dense/add before
// it. Consumers are rewired to the surviving node.
#pragma once

#include "qgraph.hpp"

#include <map>
#include <string>

namespace tflite_plugin {

struct Rewritten {
  json graph;
  // For each surviving node: the tensor whose calibrated range gives its output parameters (the last fused
  // node's output). Nodes absent here use their own name.
  std::map<std::string, std::string> range_source;

  const std::string& range_of(const std::string& node) const {
    auto it = range_source.find(node);
    return it == range_source.end() ? node : it->second;
  }
};

// Changes `params` in place (folded kernels and biases; batch-norm parameters dropped; new zero biases added).
Rewritten rewrite_for_inference(json graph, FloatParams& params);

}  // namespace tflite_plugin
