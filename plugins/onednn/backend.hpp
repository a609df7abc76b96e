// The "cpu" backend component: configuration ({"threads": N}) and compile().
#pragma once

#include "program.hpp"

namespace onednn {

class CpuBackend {
 public:
  using Program = onednn::Program;

  explicit CpuBackend(const ramjet::Config& config);
  std::unique_ptr<Program> compile(const nlohmann::json& graph, const nlohmann::json& options);

 private:
  int threads_ = 0;  // 0: OpenMP's default
};

}  // namespace onednn
