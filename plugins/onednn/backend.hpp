// The "cpu" backend component: its configuration ({"threads": N}), compile(), and check_options() — the compile
// options judged for `ramjet validate` by the same rules compile() applies (options.hpp).
#pragma once

#include "int8/routed_program.hpp"

#include <limits>

namespace onednn {

class CpuBackend {
 public:
  using Program = onednn::RoutedProgram;  // float32 (program.hpp) or int8 (int8/program.hpp)

  // threads: OpenMP threads for this backend's programs; absent: the host's num_threads (0: OpenMP's default).
  // adapt_threads: training steps may run on one thread while that is faster (a busy machine; thread_tuner.hpp).
  static ramjet::Fields fields() {
    return {ramjet::Field::integer("threads").at_least(0).at_most(std::numeric_limits<int>::max()),
            ramjet::Field::boolean("adapt_threads").fallback(false)};
  }
  static void check_options(const nlohmann::json& options, ramjet::Problems& problems);

  explicit CpuBackend(const ramjet::Config& config);
  std::unique_ptr<Program> compile(const nlohmann::json& graph, const nlohmann::json& options);

 private:
  int threads_ = 0;  // 0: OpenMP's default
  bool adapt_threads_ = false;
};

}  // namespace onednn
