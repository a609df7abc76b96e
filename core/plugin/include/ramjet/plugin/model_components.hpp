// Host-side owners of the components that shape training and deployment around a backend: the precision policy,
// the distribution strategy, the quantizer and the exporter. Like every ComponentInstance they turn failing
// statuses into the core's exceptions, naming the component.
#pragma once

#include "ramjet/plugin/components.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>

namespace ramjet::core {

class PrecisionPolicy : public ComponentInstance {
 public:
  using ComponentInstance::ComponentInstance;
  // The policy's dtypes for every node of a graph IR, as the backend's "layer_dtypes" compile option:
  // {"<node>": {"compute": "bfloat16", "variable": "float32"}, ...}.
  nlohmann::json layer_dtypes(const nlohmann::json& graph) const;
  float loss_scale() const;
  // Reports whether the last step's gradients had an inf/NaN; returns true when the update must be skipped.
  bool update(bool found_nonfinite);
  std::string save_state() const;  // empty when the policy keeps none
  void restore_state(const std::string& state);
};

class Strategy : public ComponentInstance {
 public:
  using ComponentInstance::ComponentInstance;
  int32_t rank() const;
  int32_t world_size() const;
  void broadcast(DLTensor& tensor, int32_t root) const;
  void all_reduce(DLTensor& tensor, ramjet_reduce_op op) const;
  void barrier() const;
  // The non-blocking all-reduce (optional slots): whether the strategy has it; start returns a handle that is
  // waited for exactly once, and `tensor` stays untouched by the caller until then.
  bool has_all_reduce_start() const;
  uint64_t all_reduce_start(DLTensor& tensor, ramjet_reduce_op op) const;
  void all_reduce_wait(uint64_t handle) const;
};

class Quantizer : public ComponentInstance {
 public:
  using ComponentInstance::ComponentInstance;
  // Thread-compatible: called from the backend's tap callback, on the thread that runs forward.
  void observe(const char* tensor_name, const DLTensor& value) const;
  struct Result {
    nlohmann::json graph;  // the quantized graph (docs/quantized-graph.md)
    Example parameters;
  };
  Result quantize(const nlohmann::json& graph, Example& float_parameters) const;
};

class Exporter : public ComponentInstance {
 public:
  using ComponentInstance::ComponentInstance;
  void export_model(const nlohmann::json& graph, Example& parameters, const std::filesystem::path& path) const;
};

}  // namespace ramjet::core
