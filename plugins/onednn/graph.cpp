#include "graph.hpp"

#include "layers/registry.hpp"
#include "loss.hpp"

namespace onednn {

Graph parse_graph(const nlohmann::json& graph) {
  static const ramjet::ir::Capabilities vocabulary{"onednn cpu backend", supported_ops(), supported_losses()};
  return ramjet::ir::parse_graph(graph, vocabulary);
}

}  // namespace onednn
