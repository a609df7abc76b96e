#include "backend.hpp"

namespace onednn {

CpuBackend::CpuBackend(const ramjet::Config& config)
    : threads_(config.get_or<int>("threads", static_cast<int>(config.num_threads()))) {
  if (threads_ < 0) throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, config.where("threads") + ": must be >= 0");
}

std::unique_ptr<Program> CpuBackend::compile(const nlohmann::json& graph, const nlohmann::json& options) {
  return std::make_unique<Program>(parse_graph(graph), parse_options(options), threads_);
}

}  // namespace onednn
