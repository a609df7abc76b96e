#include "ramjet/plugin/model_components.hpp"

#include "ramjet/plugin/failure.hpp"
#include "ramjet/plugin/tensor.hpp"

namespace ramjet::core {

float PrecisionPolicy::loss_scale() const {
  ramjet_error error;
  float scale = 1.0f;
  throw_on_error(vt<ramjet_precision_policy_vtable>().loss_scale(self_, &scale, &error), error, what("loss_scale"));
  return scale;
}

bool PrecisionPolicy::update(bool found_nonfinite) {
  ramjet_error error;
  int32_t skip = 0;
  throw_on_error(vt<ramjet_precision_policy_vtable>().update(self_, found_nonfinite ? 1 : 0, &skip, &error), error,
                 what("update"));
  return skip != 0;
}

nlohmann::json PrecisionPolicy::layer_dtypes(const nlohmann::json& graph) const {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& node : graph.at("nodes")) {
    const std::string text = node.dump();
    ramjet_layer_dtypes d{};
    d.struct_size = sizeof d;
    ramjet_error error;
    throw_on_error(vt<ramjet_precision_policy_vtable>().layer_dtypes(self_, text.c_str(), &d, &error), error,
                   what("layer_dtypes"));
    out[node.at("name").get<std::string>()] = {{"compute", dtype_to_string(d.compute)},
                                               {"variable", dtype_to_string(d.variable)}};
  }
  return out;
}

std::string PrecisionPolicy::save_state() const {
  if (!has_slot(&ramjet_precision_policy_vtable::save_state)) return {};
  ramjet_error error;
  ramjet_buffer buffer;
  throw_on_error(vt<ramjet_precision_policy_vtable>().save_state(self_, &buffer, &error), error, what("save_state"));
  return buffer.bytes;
}

void PrecisionPolicy::restore_state(const std::string& state) {
  if (state.empty()) return;
  if (!has_slot(&ramjet_precision_policy_vtable::restore_state))
    throw InvalidInput(what("restore_state") + ": the checkpoint has loss-scaler state but the policy cannot take it");
  ramjet_error error;
  throw_on_error(vt<ramjet_precision_policy_vtable>().restore_state(self_, state.data(), state.size(), &error), error,
                 what("restore_state"));
}

namespace {
ramjet_collective_args collective(ramjet_reduce_op op, int32_t root) {
  return ramjet_collective_args{sizeof(ramjet_collective_args), RAMJET_ABI_VERSION, op, root, nullptr};
}
}  // namespace

int32_t Strategy::rank() const {
  ramjet_error error;
  int32_t r = 0;
  throw_on_error(vt<ramjet_strategy_vtable>().rank(self_, &r, &error), error, what("rank"));
  return r;
}

int32_t Strategy::world_size() const {
  ramjet_error error;
  int32_t n = 1;
  throw_on_error(vt<ramjet_strategy_vtable>().world_size(self_, &n, &error), error, what("world_size"));
  return n;
}

void Strategy::broadcast(DLTensor& tensor, int32_t root) const {
  ramjet_error error;
  const auto args = collective(RAMJET_REDUCE_SUM, root);
  throw_on_error(vt<ramjet_strategy_vtable>().broadcast(self_, &tensor, &args, &error), error, what("broadcast"));
}

void Strategy::all_reduce(DLTensor& tensor, ramjet_reduce_op op) const {
  ramjet_error error;
  const auto args = collective(op, 0);
  throw_on_error(vt<ramjet_strategy_vtable>().all_reduce(self_, &tensor, &args, &error), error, what("all_reduce"));
}

bool Strategy::has_all_reduce_start() const {
  return has_slot(&ramjet_strategy_vtable::all_reduce_start) && has_slot(&ramjet_strategy_vtable::all_reduce_wait);
}

uint64_t Strategy::all_reduce_start(DLTensor& tensor, ramjet_reduce_op op) const {
  if (!has_all_reduce_start()) throw RuntimeFailure(what("all_reduce_start") + ": the strategy has no such slot");
  ramjet_error error;
  uint64_t handle = 0;
  const auto args = collective(op, 0);
  throw_on_error(vt<ramjet_strategy_vtable>().all_reduce_start(self_, &tensor, &args, &handle, &error), error,
                 what("all_reduce_start"));
  return handle;
}

void Strategy::all_reduce_wait(uint64_t handle) const {
  if (!has_all_reduce_start()) throw RuntimeFailure(what("all_reduce_wait") + ": the strategy has no such slot");
  ramjet_error error;
  throw_on_error(vt<ramjet_strategy_vtable>().all_reduce_wait(self_, handle, &error), error, what("all_reduce_wait"));
}

void Strategy::barrier() const {
  ramjet_error error;
  throw_on_error(vt<ramjet_strategy_vtable>().barrier(self_, &error), error, what("barrier"));
}

void Quantizer::observe(const char* tensor_name, const DLTensor& value) const {
  ramjet_error error;
  throw_on_error(vt<ramjet_quantizer_vtable>().observe(self_, tensor_name, &value, &error), error,
                 what("observe") + " '" + tensor_name + "'");
}

Quantizer::Result Quantizer::quantize(const nlohmann::json& graph, Example& float_parameters) const {
  const std::string text = graph.dump();
  ramjet_error error;
  ramjet_buffer out_graph;
  Result result;
  throw_on_error(vt<ramjet_quantizer_vtable>().quantize(self_, text.c_str(), &float_parameters, &out_graph,
                                                        &result.parameters, &error),
                 error, what("quantize"));
  retain_if_foreign(result.parameters);
  try {
    result.graph = nlohmann::json::parse(out_graph.bytes);
  } catch (const std::exception& e) {
    throw RuntimeFailure(what("quantize") + ": returned invalid graph JSON: " + e.what());
  }
  return result;
}

void Exporter::export_model(const nlohmann::json& graph, Example& parameters, const std::filesystem::path& path) const {
  const std::string text = graph.dump();
  const std::string file = path.string();
  ramjet_error error;
  throw_on_error(vt<ramjet_exporter_vtable>().export_model(self_, text.c_str(), &parameters, file.c_str(), &error),
                 error, what("export_model") + " to " + file);
}

}  // namespace ramjet::core
