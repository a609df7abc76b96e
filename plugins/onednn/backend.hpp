// The "cpu" backend component: its configuration ({"threads": N, "adapt_threads": B, "pin_threads": B}),
// compile(), and check_options() — the compile options judged for `ramjet validate` by the same rules compile()
// applies (options.hpp).
#pragma once

#include "int8/routed_program.hpp"

#include <limits>
#include <vector>

namespace onednn {

class CpuBackend {
 public:
  using Program = onednn::RoutedProgram;  // float32 (program.hpp) or int8 (int8/program.hpp)

  // threads: OpenMP threads for this backend's programs; absent: the host's num_threads (0: OpenMP's default).
  // adapt_threads: training steps may run on one thread while that is faster (a busy machine; thread_tuner.hpp).
  // pin_threads: threads as many as the process's CPUs run one on each during a call (thread_scope.hpp).
  static ramjet::Fields fields() {
    return {ramjet::Field::integer("threads").at_least(0).at_most(std::numeric_limits<int>::max()),
            ramjet::Field::boolean("adapt_threads").fallback(false),
            ramjet::Field::boolean("pin_threads").fallback(true)};
  }
  static void check_options(const nlohmann::json& options, ramjet::Problems& problems);

  explicit CpuBackend(const ramjet::Config& config);
  std::unique_ptr<Program> compile(const nlohmann::json& graph, const nlohmann::json& options);

 private:
  int threads_ = 0;  // 0: OpenMP's default
  bool adapt_threads_ = false;
  std::vector<int> pin_cpus_;  // empty: no pinning
};

}  // namespace onednn
