#include "program.hpp"

#include "kernels.hpp"
#include "thread_scope.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>

namespace onednn {
namespace {

std::vector<std::pair<std::string, Shape>> param_specs(const Graph& graph) {
  std::vector<std::pair<std::string, Shape>> specs;
  for (const auto& p : graph.params) specs.emplace_back(p.name, p.shape);
  return specs;
}

// The parameters in the order the model uses them (the first node that reads each), which backward reverses: the
// order the gradients are packed in, so that the host's buckets of neighbouring gradients are neighbours in memory.
std::vector<std::string> model_order(const Graph& graph) {
  std::vector<std::string> order;
  std::set<std::string> seen;
  for (const NodeSpec& node : graph.nodes)
    for (const auto& [role, name] : node.params)
      if (seen.insert(name).second) order.push_back(name);
  return order;
}

// A node's "trainable" attribute lists the roles that learn (batch_norm: gamma and beta); without it, all do. A
// parameter is trainable unless every node reading it says otherwise; `users` counts the nodes it learns in.
void mark_trainable(const Graph& graph, ParameterStore& params) {
  std::set<std::string> frozen, learning;
  for (const NodeSpec& node : graph.nodes) {
    const auto it = node.attrs.find("trainable");
    for (const auto& [role, name] : node.params) {
      const bool learns = it == node.attrs.end() || !it->is_array() ||
                          std::find(it->begin(), it->end(), nlohmann::json(role)) != it->end();
      if (!learns) {
        frozen.insert(name);
        continue;
      }
      learning.insert(name);
      ++params.get(name).users;
    }
  }
  for (const std::string& name : frozen)
    if (!learning.count(name)) params.get(name).trainable = false;
}

template <class T>
void write_scalar(ramjet::Example& outputs, const char* name, T value) {
  DLTensor* t = outputs.find(name);
  if (t == nullptr || t->ndim != 0 || !ramjet::same_dtype(t->dtype, ramjet::dtype_of<T>()) ||
      t->device.device_type != kDLCPU) {
    outputs.set(name, ramjet::Tensor::zeros(ramjet::dtype_of<T>(), std::span<const int64_t>()));
    t = outputs.find(name);
  }
  *ramjet::data_as<T>(*t) = value;
}

// A host tensor that must be a contiguous float32 CPU tensor of exactly `shape`.
const float* checked_floats(DLTensor& t, const Shape& shape, const std::string& what) {
  if (t.device.device_type != kDLCPU) fail(RAMJET_ERR_INVALID_ARGUMENT, what + " is not a CPU tensor");
  if (!ramjet::same_dtype(t.dtype, ramjet::dtype_of<float>()))
    fail(RAMJET_ERR_INVALID_ARGUMENT, what + " has dtype " + ramjet::dtype_name(t.dtype) + "; it must be float32");
  if (t.ndim != static_cast<int32_t>(shape.size()) || !std::equal(shape.begin(), shape.end(), t.shape))
    fail(RAMJET_ERR_INVALID_ARGUMENT, what + " has shape " + shape_string(Shape(t.shape, t.shape + t.ndim)) +
                                          "; it must be " + shape_string(shape));
  if (!ramjet::is_contiguous(t)) fail(RAMJET_ERR_INVALID_ARGUMENT, what + " must be contiguous");
  return ramjet::data_as<float>(t);
}

ramjet::Tensor copy_of(const float* data, const Shape& shape) {
  ramjet::Tensor t = ramjet::Tensor::zeros(ramjet::dtype_of<float>(), shape);
  std::memcpy(t.data<float>(), data, static_cast<size_t>(product(shape)) * sizeof(float));
  return t;
}

}  // namespace

Program::Program(Graph graph, CompileOptions options, int threads, bool adapt_threads, std::vector<int> pin)
    : graph_(std::move(graph)), options_(std::move(options)), threads_(threads > 0 ? threads : omp_get_max_threads()),
      pin_(std::move(pin)),
      engine_(dnnl::engine::kind::cpu, 0), stream_(engine_), params_(param_specs(graph_), model_order(graph_), engine_),
      tuner_(threads_, adapt_threads) {
  mark_trainable(graph_, params_);
  optimizer_ = std::make_unique<Optimizer>(options_.optimizer, params_);
  plan_for(options_.batch, graph_.loss.has_value(), threads_);  // compile errors surface here, not at the first step
}

Plan& Program::plan_for(int64_t batch, bool training, int threads) {
  training = training && graph_.loss.has_value();
  auto it = plans_.find({batch, training, threads});
  if (it != plans_.end()) return *it->second;
  ThreadScope scope(threads, pin_);
  auto plan = std::make_unique<Plan>(graph_, options_, params_, engine_, batch, training, arena_, taps_);
  if (!taps_.empty()) plan->set_taps(taps_);
  arena_bytes_ = std::max(arena_bytes_, plan->arena_bytes());
  // At debug: every rank of a distributed run builds its plans, and the host shows only rank 0's progress.
  char line[200];
  std::snprintf(line, sizeof line, "%s batch %lld, %d threads: %.1f MB of activations%s and workspaces; %.1f MB for all %zu plans "
                "so far (they share one arena)", training ? "training" : "inference", static_cast<long long>(batch), threads,
                plan->arena_bytes() / 1e6, training ? ", gradients" : "", arena_bytes_ / 1e6, plans_.size() + 1);
  std::string fused;
  for (const std::string& name : plan->fused_away()) fused += (fused.empty() ? "; fused into their readers: " : ", ") + name;
  std::string linked;
  for (const std::string& name : plan->norms_in_chunks())
    linked += (linked.empty() ? "; batch norms in their convolution's chunks: " : ", ") + name;
  ramjet::log(RAMJET_LOG_DEBUG, "onednn", line + fused + linked);
  return *plans_.emplace(std::make_tuple(batch, training, threads), std::move(plan)).first->second;
}

// Checks each graph input without building anything unless it is wrong (this runs every step).
int64_t Program::check_inputs(ramjet::Example& inputs) const {
  int64_t batch = -1;
  for (const TensorSpec& spec : graph_.inputs) {
    DLTensor* t = inputs.find(spec.name);
    if (t == nullptr) fail(RAMJET_ERR_INVALID_ARGUMENT, "forward: the inputs have no tensor named '" + spec.name + "'");
    const bool shaped = t->ndim == static_cast<int32_t>(spec.shape.size()) + 1 && t->shape[0] >= 1 &&
                        (batch < 0 || t->shape[0] == batch) &&
                        std::equal(spec.shape.begin(), spec.shape.end(), t->shape + 1);
    const bool ids = spec.dtype.code == kDLInt;
    const DLDataType wanted = ids ? ramjet::dtype_of<int32_t>() : ramjet::dtype_of<float>();
    if (!shaped || t->device.device_type != kDLCPU || !ramjet::same_dtype(t->dtype, wanted) ||
        !ramjet::is_contiguous(*t)) {
      Shape full{batch < 0 ? std::max<int64_t>(t->ndim > 0 ? t->shape[0] : 1, 1) : batch};
      full.insert(full.end(), spec.shape.begin(), spec.shape.end());
      const std::string what = "forward: input '" + spec.name + "'";
      if (ids && !ramjet::same_dtype(t->dtype, wanted))
        fail(RAMJET_ERR_INVALID_ARGUMENT, what + " has dtype " + ramjet::dtype_name(t->dtype) +
                                              "; it must be int32 (token IDs)");
      if (ids) fail(RAMJET_ERR_INVALID_ARGUMENT, what + " must be a contiguous CPU tensor of shape " + shape_string(full));
      checked_floats(*t, full, what);  // throws, saying what is wrong
    }
    batch = t->shape[0];
  }
  return batch;
}

void Program::forward(const ramjet_forward_args& args, ramjet::Example& inputs, ramjet::Example& outputs) {
  const int threads = tuner_.threads();
  ThreadScope scope(threads, pin_);
  trained_ = nullptr;  // whatever happens below, the buffers of an earlier training forward are not kept
  step_start_ = std::chrono::steady_clock::now();
  DLTensor* labels = graph_.loss ? inputs.find(graph_.loss->labels) : nullptr;
  Plan& plan = plan_for(check_inputs(inputs), args.training != 0 && labels != nullptr, threads);
  for (size_t i = 0; i < graph_.inputs.size(); ++i) plan.load_input(i, *inputs.find(graph_.inputs[i].name));
  const Exec exec{stream_, args.training != 0, args.seed, nullptr};
  plan.forward(exec);
  plan.write_outputs(exec, outputs);
  if (labels != nullptr) {
    float loss = 0.0f;
    int32_t correct = 0, counted = 0;
    plan.loss()->forward(exec, *labels, loss, correct, counted);
    write_scalar(outputs, RAMJET_OUTPUT_LOSS, loss);
    if (plan.loss()->counts_correct()) {
      write_scalar(outputs, RAMJET_OUTPUT_CORRECT, correct);
      write_scalar(outputs, RAMJET_OUTPUT_COUNTED, counted);
    }
  }
  if (tap_fn_ != nullptr) plan.run_taps(exec, tap_fn_, tap_user_);
  stream_.wait();
  if (plan.has_backward()) {
    trained_ = &plan;
    trained_threads_ = threads;
    step_timed_ = true;
  }
}

void Program::backward(const ramjet_backward_args& args) {
  if (trained_ == nullptr) {
    std::string labels = graph_.loss ? "'" + graph_.loss->labels + "'" : "(the graph has no loss)";
    fail(RAMJET_ERR_INVALID_ARGUMENT, "backward: no training forward to back-propagate; call forward with training = 1 "
                                      "and the labels " + labels + " first");
  }
  if (!std::isfinite(args.loss_scale)) fail(RAMJET_ERR_INVALID_ARGUMENT, "backward: loss_scale must be finite");
  ThreadScope scope(trained_threads_, pin_);
  for (const auto& p : params_.all()) {
    p->pending = p->users;
    p->written = false;
  }
  const Exec exec{stream_, true, 0, &args};
  trained_->backward(exec, args.loss_scale);
  for (const auto& p : params_.all()) {  // trainable parameters no layer reads: a zero gradient
    if (!p->trainable || p->users > 0) continue;
    if (!args.accumulate) zero_floats(p->grad_data(), p->count());
    p->pending = 1;
    exec.gradient_done(*p);
  }
  stream_.wait();
  if (args.out_found_nonfinite != nullptr) {
    bool finite = true;
    for (const auto& p : params_.all()) finite = finite && (!p->trainable || all_finite(p->grad_data(), p->count()));
    *args.out_found_nonfinite = finite ? 0 : 1;
  }
  if (step_timed_) {  // the first backward after the forward ends a step; another (rescaled, accumulated) does not
    tuner_.step_done(std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start_).count());
    step_timed_ = false;
  }
}

void Program::optimizer_update(const ramjet_update_args& args) {
  ThreadScope scope(tuner_.threads(), pin_);
  optimizer_->update(args);
}

void Program::get_state(std::string_view which, ramjet::Example& out) {
  if (which == "parameters") {
    for (const auto& p : params_.all()) out.set(p->name, copy_of(p->data(), p->shape));
  } else if (which == "gradients") {
    for (const auto& p : params_.all())
      if (p->trainable) out.set(p->name, ramjet::Tensor(&p->grad_view));  // no deleter: a view
  } else if (which == "optimizer") {
    for (const auto& s : optimizer_->slots()) out.set(s.name, copy_of(s.data.data(), s.param->shape));
  } else if (which != "buffers") {
    fail(RAMJET_ERR_INVALID_ARGUMENT, "get_state: unknown state '" + std::string(which) +
                                          "' (parameters, gradients, optimizer, buffers)");
  }
}

void Program::set_state(std::string_view which, ramjet::Example& values) {
  const std::string what = "set_state(" + std::string(which) + "): ";
  if (which != "parameters" && which != "gradients" && which != "optimizer" && which != "buffers")
    fail(RAMJET_ERR_INVALID_ARGUMENT, "set_state: unknown state '" + std::string(which) +
                                          "' (parameters, gradients, optimizer, buffers)");
  // Check everything before changing anything.
  std::vector<std::pair<float*, const float*>> copies;
  std::vector<size_t> counts;
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string name(values.name(i));
    DLTensor& t = *values.at(i);
    float* target = nullptr;
    const Shape* shape = nullptr;
    if (which == "optimizer") {
      if (Optimizer::Slot* s = optimizer_->find(name)) target = s->data.data(), shape = &s->param->shape;
    } else if (which != "buffers") {
      Param* p = params_.find(name);
      if (p != nullptr && (which == "parameters" || p->trainable))
        target = which == "parameters" ? p->data() : p->grad_data(), shape = &p->shape;
    }
    if (target == nullptr)
      fail(RAMJET_ERR_INVALID_ARGUMENT, what + "the program has no " + std::string(which) + " entry named '" + name + "'");
    copies.emplace_back(target, checked_floats(t, *shape, what + "'" + name + "'"));
    counts.push_back(static_cast<size_t>(product(*shape)));
  }
  for (size_t i = 0; i < copies.size(); ++i) std::memcpy(copies[i].first, copies[i].second, counts[i] * sizeof(float));
  if (which == "parameters")
    for (const auto& p : params_.all()) ++p->version;
}

void Program::set_taps(const std::vector<std::string>& names, ramjet_tap_fn fn, void* user) {
  std::set<std::string> known;
  for (const auto& in : graph_.inputs) known.insert(in.name);
  for (const auto& node : graph_.nodes) known.insert(node.name);
  for (const auto& name : names)
    if (!known.count(name)) fail(RAMJET_ERR_INVALID_ARGUMENT, "set_taps: the graph has no tensor named '" + name + "'");
  if (!names.empty() && fn == nullptr) fail(RAMJET_ERR_INVALID_ARGUMENT, "set_taps: no tap function");
  ThreadScope scope(threads_, pin_);
  taps_ = names;
  tap_fn_ = names.empty() ? nullptr : fn;
  tap_user_ = user;
  // Inference plans reuse a value's memory once read, and a plan may have fused a tapped batch norm with its
  // activation, or a tapped convolution with its pool: those are built again, keeping the tapped values.
  for (auto it = plans_.begin(); it != plans_.end();) {
    if (std::get<1>(it->first) && it->second->can_tap(taps_)) {
      ++it;
      continue;
    }
    if (it->second.get() == trained_) trained_ = nullptr;  // backward then asks for a training forward again
    it = plans_.erase(it);
  }
  for (auto& [key, plan] : plans_) plan->set_taps(taps_);
}

}  // namespace onednn
