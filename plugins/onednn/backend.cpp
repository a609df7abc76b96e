#include "backend.hpp"

#include <dlfcn.h>

namespace onednn {
namespace {

// OpenMP's worker threads outlive every parallel region and sit parked inside libgomp. If this plugin were
// unloaded and took libgomp with it, those threads would be left executing unmapped code (and LeakSanitizer
// crashes scanning them). Pin the runtime for the life of the process: the plugin itself may still unload.
void pin_openmp_runtime() {
  static const bool pinned = [] {
    for (const char* name : {"libgomp.so.1", "libdnnl.so.2"})
      if (void* handle = dlopen(name, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE)) dlclose(handle);
    return true;
  }();
  (void)pinned;
}

}  // namespace

CpuBackend::CpuBackend(const ramjet::Config& config)
    : threads_(config.get_or<int>("threads", static_cast<int>(config.num_threads()))) {
  if (threads_ < 0) throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, config.where("threads") + ": must be >= 0");
  pin_openmp_runtime();
}

std::unique_ptr<CpuBackend::Program> CpuBackend::compile(const nlohmann::json& graph, const nlohmann::json& options) {
  if (int8::wants_int8(options))  // a qgraph: inference-only int8 (int8/program.hpp)
    return std::make_unique<RoutedProgram>(std::make_unique<int8::QuantizedProgram>(graph, options, threads_));
  return std::make_unique<RoutedProgram>(
      std::make_unique<onednn::Program>(parse_graph(graph), parse_options(options), threads_));
}

}  // namespace onednn
