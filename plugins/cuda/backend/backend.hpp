// The "cuda" backend component: its configuration (which device, how its memory grows, the cuDNN workspace),
// compile(), and check_options() — the compile options judged for `ramjet validate` by compile()'s own rules.
//
// Configuration, as TensorFlow's GPU options: memory grows on demand by default (TensorFlow's allow_growth), or
// never past memory_limit_mb (its memory_limit); freed blocks are cached for the next step (caching_allocator.hpp).
#pragma once

#include "program.hpp"

#include <ramjet/sdk/config.hpp>
#include <ramjet/sdk/fields.hpp>

#include <memory>

namespace cuda_plugin {

class CudaBackend {
 public:
  using Program = cuda_plugin::Program;

  static ramjet::Fields fields() {
    using ramjet::Field;
    return {Field::integer("device").at_least(0).fallback(0).doc("the CUDA device ordinal"),
            Field::integer("memory_limit_mb").at_least(0).fallback(0)
                .doc("0: grow on demand; otherwise never hold more device memory than this"),
            Field::integer("cudnn_workspace_mb").at_least(0).fallback(256)
                .doc("the most workspace a convolution's algorithm may use"),
            Field::boolean("cuda_graphs").fallback(true)
                .doc("replay each step's fixed launches from CUDA graphs (false: launch every kernel every step)"),
            Field::integer("threads").at_least(0).doc("accepted, unused (the host's thread count)")};
  }
  static void check_options(const nlohmann::json& options, ramjet::Problems& problems);

  // Opens the device: "no CUDA device: ..." (RAMJET_ERR_DEVICE) where there is none.
  explicit CudaBackend(const ramjet::Config& config);
  std::unique_ptr<Program> compile(const nlohmann::json& graph, const nlohmann::json& options);

 private:
  std::unique_ptr<Device> device_;
};

}  // namespace cuda_plugin
