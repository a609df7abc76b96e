#include "backend.hpp"

namespace cuda_plugin {

void CudaBackend::check_options(const nlohmann::json& options, ramjet::Problems& problems) {
  for (auto& issue : option_issues(options)) problems.push_back(std::move(issue.problem));
}

CudaBackend::CudaBackend(const ramjet::Config& config) {
  DeviceSettings settings;
  settings.ordinal = config.get_or<int>("device", 0);
  settings.memory.limit_bytes = static_cast<size_t>(config.get_or<int64_t>("memory_limit_mb", 0)) << 20;
  settings.graphs = config.get_or<bool>("cuda_graphs", true);
  settings.cudnn_workspace_limit = static_cast<size_t>(config.get_or<int64_t>("cudnn_workspace_mb", 256)) << 20;
  device_ = std::make_unique<Device>(settings);
}

std::unique_ptr<CudaBackend::Program> CudaBackend::compile(const nlohmann::json& graph, const nlohmann::json& options) {
  static const ramjet::ir::Capabilities capabilities{
      "cuda backend", supported_ops(),
      {"sparse_softmax_cross_entropy", "categorical_cross_entropy", "mse", "l1", "binary_cross_entropy"}};
  ramjet::ir::Graph parsed = ramjet::ir::parse_graph(graph, capabilities);
  device_->activate();
  CompileOptions o = parse_options(options);
  return std::make_unique<Program>(*device_, std::move(parsed), o);
}

}  // namespace cuda_plugin
