#include "model_warnings.hpp"

namespace ramjet::core {

using nlohmann::json;

std::vector<Problem> model_warnings(const Graph& graph, const std::string& model_pointer) {
  std::vector<Problem> out;
  const json& ir = graph.ir;
  if (!ir.contains("loss") || !ir.contains("nodes")) return out;
  const std::string loss = ir["loss"].value("op", "");
  const bool softmax_loss = loss == "sparse_softmax_cross_entropy" || loss == "categorical_cross_entropy";
  const bool sigmoid_loss = loss == "binary_cross_entropy";
  if (!softmax_loss && !sigmoid_loss) return out;  // mse and l1 read values, any activation may come before them
  const std::string input = ir["loss"].value("input", "");
  // One node per layer, in the order of model.layers: a node's index is its layer's.
  const json& nodes = ir["nodes"];
  for (size_t i = 0; i < nodes.size(); ++i) {
    const json& node = nodes[i];
    if (node.value("name", "") != input) continue;
    const std::string op = node.value("op", "");
    std::string activation = op == "softmax" ? "softmax" : "";
    if (activation.empty() && node.contains("attrs") && node["attrs"].is_object())
      activation = node["attrs"].value("activation", "");
    const std::string applied = softmax_loss ? "softmax" : "sigmoid";
    const bool probabilities = activation == "softmax" || (sigmoid_loss && activation == "sigmoid");
    if (!probabilities) break;
    const std::string layer = model_pointer + "/layers/" + std::to_string(i);
    out.push_back({op == "softmax" || op == "activation" ? layer : layer + "/activation",
                   "layer '" + input + "' applies " + activation + " right before the " + loss +
                       " loss, which reads logits and applies its own " + applied +
                       ": it would get probabilities as logits, so training still runs but minimizes the wrong loss "
                       "and learns slowly (remove the " + activation + "; the loss includes it)"});
    break;
  }
  return out;
}

}  // namespace ramjet::core
