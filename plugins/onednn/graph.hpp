// The graph IR, read by the SDK's reader (ramjet/sdk/graph_ir.hpp) with this backend's vocabulary: the ops its
// layer registry has and the losses loss.cpp computes.
#pragma once

#include "common.hpp"

#include <ramjet/sdk/graph_ir.hpp>

namespace onednn {

using ramjet::ir::conv1d_geometry;
using ramjet::ir::conv_geometry;
using ramjet::ir::ConvGeometry;
using ramjet::ir::Graph;
using ramjet::ir::LossSpec;
using ramjet::ir::NodeSpec;
using ramjet::ir::TensorSpec;

// Throws ramjet::Error: INVALID_ARGUMENT for malformed graphs, UNSUPPORTED for ops or dtypes this backend lacks.
Graph parse_graph(const nlohmann::json& graph);

}  // namespace onednn
