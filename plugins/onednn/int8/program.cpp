#include "program.hpp"

#include "../thread_scope.hpp"

#include <omp.h>

#include <algorithm>

namespace onednn::int8 {
namespace {

// The float graph parser checks structure, names and shapes; it knows float32 parameters only, so it reads a copy
// without the dtypes (QParamStore checks those).
Graph parse_structure(const nlohmann::json& qgraph) {
  if (!qgraph.is_object()) fail(RAMJET_ERR_INVALID_ARGUMENT, "qgraph: the graph must be a JSON object");
  nlohmann::json copy = qgraph;
  if (copy.contains("params") && copy["params"].is_object())
    for (auto& [name, spec] : copy["params"].items())
      if (spec.is_object()) spec.erase("dtype");
  copy.erase("loss");  // inference only
  return parse_graph(copy);
}

[[noreturn]] void inference_only(const char* call) {
  fail(RAMJET_ERR_UNSUPPORTED, std::string(call) + ": the int8 program (precision int8) is inference-only; compile "
                                                   "the float graph to train");
}

}  // namespace

bool wants_int8(const nlohmann::json& options) {
  if (!options.is_object()) return false;
  const auto it = options.find("precision");
  return it != options.end() && it->is_string() && it->get<std::string>() == "int8";
}

QuantizedProgram::QuantizedProgram(const nlohmann::json& qgraph, int64_t batch, int threads, std::vector<int> pin)
    : graph_(parse_structure(qgraph)),
      quant_(qgraph),
      params_(qgraph.contains("params") ? qgraph["params"] : nlohmann::json()),
      batch_(batch),
      threads_(threads),
      pin_(std::move(pin)),
      engine_(dnnl::engine::kind::cpu, 0),
      stream_(engine_),
      chunked_(graph_, quant_, params_, engine_) {
  ThreadScope scope(threads_, pin_);
  const QPlan& compiled = plan_for(batch_);  // compile errors surface here, not at the first forward
  largest_value_bytes_ = compiled.largest_value_bytes();
  for (const TensorSpec& spec : graph_.inputs) input_sizes_.push_back(product(spec.shape));
  for (size_t i = 0; i < graph_.outputs.size(); ++i) {
    const Shape each = compiled.example_output_shape(i);
    output_sizes_.push_back(product(each));
    Shape batched{batch_};
    batched.insert(batched.end(), each.begin(), each.end());
    output_shapes_.push_back(batched);
  }
}

QPlan& QuantizedProgram::plan_for(int64_t batch) {
  auto it = plans_.find(batch);
  if (it != plans_.end()) return *it->second;
  auto plan = std::make_unique<QPlan>(graph_, quant_, params_, engine_, batch);
  return *plans_.emplace(batch, std::move(plan)).first->second;
}

int64_t QuantizedProgram::check_inputs(ramjet::Example& inputs) const {
  int64_t batch = -1;
  for (const TensorSpec& spec : graph_.inputs) {
    const std::string what = "forward: input '" + spec.name + "'";
    DLTensor* t = inputs.find(spec.name);
    if (t == nullptr) fail(RAMJET_ERR_INVALID_ARGUMENT, "forward: the inputs have no tensor named '" + spec.name + "'");
    if (t->device.device_type != kDLCPU) fail(RAMJET_ERR_INVALID_ARGUMENT, what + " is not a CPU tensor");
    if (!ramjet::same_dtype(t->dtype, ramjet::dtype_of<float>()))
      fail(RAMJET_ERR_INVALID_ARGUMENT, what + " has dtype " + ramjet::dtype_name(t->dtype) + "; it must be float32");
    const bool shaped = t->ndim == static_cast<int32_t>(spec.shape.size()) + 1 && t->shape[0] >= 1 &&
                        (batch < 0 || t->shape[0] == batch) &&
                        std::equal(spec.shape.begin(), spec.shape.end(), t->shape + 1);
    if (!shaped) {
      Shape wanted{batch < 0 ? int64_t{-1} : batch};
      wanted.insert(wanted.end(), spec.shape.begin(), spec.shape.end());
      fail(RAMJET_ERR_INVALID_ARGUMENT, what + " has shape " + shape_string(Shape(t->shape, t->shape + t->ndim)) +
                                            "; it must be " + shape_string(wanted) + " (-1: any batch)");
    }
    if (!ramjet::is_contiguous(*t)) fail(RAMJET_ERR_INVALID_ARGUMENT, what + " must be contiguous");
    batch = t->shape[0];
  }
  return batch;
}

void QuantizedProgram::forward(const ramjet_forward_args&, ramjet::Example& inputs, ramjet::Example& outputs) {
  params_.require_complete("forward");
  ThreadScope scope(threads_, pin_);
  const int64_t batch = check_inputs(inputs);
  const int team = threads_ > 0 ? threads_ : omp_get_max_threads();
  const int64_t chunks = ChunkedForward::chunk_count(batch, team, largest_value_bytes_);
  if (chunks <= 1) return plan_for(batch).forward(stream_, params_, inputs, outputs);

  rows_in_.resize(graph_.inputs.size());
  rows_out_.resize(graph_.outputs.size());
  for (size_t i = 0; i < rows_in_.size(); ++i) rows_in_[i] = input_rows(inputs, graph_.inputs[i].name);
  for (size_t i = 0; i < rows_out_.size(); ++i) {
    output_shapes_[i][0] = batch;
    rows_out_[i] = output_rows(outputs, graph_.outputs[i], output_shapes_[i]);
  }
  chunked_.run(team, batch, chunks, rows_in_, input_sizes_, rows_out_, output_sizes_);
}

void QuantizedProgram::backward(const ramjet_backward_args&) { inference_only("backward"); }
void QuantizedProgram::optimizer_update(const ramjet_update_args&) { inference_only("optimizer_update"); }

void QuantizedProgram::get_state(std::string_view which, ramjet::Example& out) {
  if (which == "parameters") return params_.copy_to(out);
  if (which == "buffers") return;
  if (which == "gradients" || which == "optimizer") inference_only(("get_state(" + std::string(which) + ")").c_str());
  fail(RAMJET_ERR_INVALID_ARGUMENT, "get_state: unknown state '" + std::string(which) + "' (parameters, buffers)");
}

void QuantizedProgram::set_state(std::string_view which, ramjet::Example& values) {
  if (which == "parameters") return params_.set(values);
  if (which == "buffers" && values.size() == 0) return;
  if (which == "gradients" || which == "optimizer" || which == "buffers")
    inference_only(("set_state(" + std::string(which) + ")").c_str());
  fail(RAMJET_ERR_INVALID_ARGUMENT, "set_state: unknown state '" + std::string(which) + "' (parameters)");
}

void QuantizedProgram::set_taps(const std::vector<std::string>& names, ramjet_tap_fn, void*) {
  if (!names.empty())
    fail(RAMJET_ERR_UNSUPPORTED, "set_taps: the int8 program has no taps (calibrate on the float program)");
}

}  // namespace onednn::int8
