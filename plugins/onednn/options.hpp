// compile() options: the batch the program is built for, the precision, the optimizer, and the threads.
//
// The options are judged in one place (option_issues) that serves both `ramjet validate` (the backend's
// check_options slot) and compile(), so the two never disagree. What the core sends:
//   {"batch": N, "threads": T, "optimizer": {"type": "adam", ...},
//    "layer_dtypes": {"<node>": {"compute": "bfloat16", "variable": "float32"}, ...}}
// or the backend's own "precision" word instead of layer_dtypes ("float32", "mixed_bfloat16", or "int8" for a
// qgraph). Without either, everything is float32.
#pragma once

#include "common.hpp"

#include <ramjet/sdk/graph_ir.hpp>
#include <ramjet/sdk/optimizer_options.hpp>

#include <optional>

namespace onednn {

using ramjet::ir::Graph;

// float32, or mixed_bfloat16: layers build their primitives with compute_type() (bf16), while parameters,
// gradients, optimizer slots, the loss, softmax, batch-norm statistics and the tensors exchanged with the host
// stay float32 (reorders convert at the boundaries).
enum class Precision { float32, mixed_bfloat16 };

using ramjet::OptimizerSpec;
using ramjet::OptionIssue;

struct CompileOptions {
  int64_t batch = 32;
  Precision precision = Precision::float32;
  OptimizerSpec optimizer;
  std::optional<int> threads;  // overrides the backend's configuration when given

  dt compute_type() const { return precision == Precision::mixed_bfloat16 ? dt::bf16 : dt::f32; }
};

// Everything that can be judged without the graph, in document order.
std::vector<OptionIssue> option_issues(const nlohmann::json& options);

// The options compile() runs with. Throws ramjet::Error listing every issue (RAMJET_ERR_UNSUPPORTED when all are
// about what this backend cannot run, else RAMJET_ERR_INVALID_ARGUMENT), and UNSUPPORTED when layer_dtypes ask for
// a mix the backend cannot run on `graph` (needed when the options have layer_dtypes; the int8 path has none).
// Precision "int8" leaves `precision` float32: the int8 program reads only batch and threads.
CompileOptions parse_options(const nlohmann::json& options, const Graph* graph);

}  // namespace onednn
