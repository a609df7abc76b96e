// The "cpu" backend component: configuration ({"threads": N}) and compile().
#pragma once

#include "int8/routed_program.hpp"

namespace onednn {

class CpuBackend {
 public:
  using Program = onednn::RoutedProgram;  // float32 (program.hpp) or int8 (int8/program.hpp)

  explicit CpuBackend(const ramjet::Config& config);
  std::unique_ptr<Program> compile(const nlohmann::json& graph, const nlohmann::json& options);

 private:
  int threads_ = 0;  // 0: OpenMP's default
};

}  // namespace onednn
