// compile() options of the cuda backend, judged in one place (option_issues) for both `ramjet validate` (the
// check_options slot) and compile(). What the core sends:
//   {"batch": N, "threads": T, "optimizer": {"type": "adam", ...},
//    "layer_dtypes": {"<node>": {"compute": "float16", "variable": "float32"}, ...}}
// or the backend's own "precision" word ("float32", "mixed_float16"). `threads` is accepted and unused: the GPU's
// parallelism is its own.
#pragma once

#include <ramjet/sdk/optimizer_options.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <vector>

namespace cuda_plugin {

struct CompileOptions {
  int64_t batch = 32;
  // mixed_float16: layers compute in float16 (Tensor Cores) over float32 master weights; softmax, the
  // normalisations' statistics and the loss stay float32 arithmetic inside their kernels.
  bool half = false;
  ramjet::OptimizerSpec optimizer;
};

// The optimizer types the fused multi-tensor update runs.
const std::vector<std::string>& cuda_optimizer_types();

std::vector<ramjet::OptionIssue> option_issues(const nlohmann::json& options);

// Throws ramjet::Error listing every issue (RAMJET_ERR_UNSUPPORTED when all are about what this backend cannot run).
CompileOptions parse_options(const nlohmann::json& options);

}  // namespace cuda_plugin
