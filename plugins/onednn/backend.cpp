#include "backend.hpp"

#include "thread_scope.hpp"

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

void CpuBackend::check_options(const nlohmann::json& options, ramjet::Problems& problems) {
  for (auto& issue : option_issues(options)) problems.push_back(std::move(issue.problem));
}

// fields() has checked the configuration (create() refuses what check_config reports) and holds the defaults.
CpuBackend::CpuBackend(const ramjet::Config& config)
    : threads_(config.get_or<int>("threads", static_cast<int>(config.num_threads()))) {
  const nlohmann::json c = fields().with_defaults(config.json());
  adapt_threads_ = c.at("adapt_threads").get<bool>();
  pin_cpus_ = cpus_to_pin(c.at("pin_threads").get<bool>());
  pin_openmp_runtime();
}

std::unique_ptr<CpuBackend::Program> CpuBackend::compile(const nlohmann::json& graph, const nlohmann::json& options) {
  if (int8::wants_int8(options)) {  // a qgraph: inference-only int8 (int8/program.hpp)
    const CompileOptions o = parse_options(options, nullptr);
    return std::make_unique<RoutedProgram>(
        std::make_unique<int8::QuantizedProgram>(graph, o.batch, o.threads.value_or(threads_), pin_cpus_));
  }
  Graph parsed = parse_graph(graph);
  CompileOptions o = parse_options(options, &parsed);
  const int threads = o.threads.value_or(threads_);
  return std::make_unique<RoutedProgram>(std::make_unique<onednn::Program>(std::move(parsed), std::move(o), threads, adapt_threads_,
                                                                     pin_cpus_));
}

}  // namespace onednn
