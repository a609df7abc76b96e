#include "parameters.hpp"

#include "cuda_check.hpp"
#include "elementwise.hpp"

#include <ramjet/sdk/dtype.hpp>
#include <ramjet/sdk/error.hpp>
#include <ramjet/sdk/tensor.hpp>

#include <cmath>
#include <cstring>

namespace cuda_plugin {
namespace {

using ramjet::ir::product;
using ramjet::ir::shape_string;

[[noreturn]] void invalid(const std::string& message) { throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, message); }

// A host tensor's floats, after checking it is what `shape` says.
const float* host_floats(const DLTensor& t, const Shape& shape, const std::string& what) {
  const bool same_shape = t.ndim == static_cast<int32_t>(shape.size()) && std::equal(shape.begin(), shape.end(), t.shape);
  if (t.device.device_type != kDLCPU || !ramjet::same_dtype(t.dtype, ramjet::dtype_of<float>()) ||
      !ramjet::is_contiguous(t) || !same_shape) {
    Shape got(t.shape, t.shape + t.ndim);
    invalid(what + " must be a contiguous float32 CPU tensor of shape " + shape_string(shape) + ", got " +
            ramjet::dtype_name(t.dtype) + " " + shape_string(got));
  }
  return reinterpret_cast<const float*>(static_cast<const char*>(t.data) + t.byte_offset);
}

}  // namespace

Parameters::Parameters(Device& device, const ramjet::ir::Graph& graph, bool half, const ramjet::OptimizerSpec& optimizer)
    : device_(device), optimizer_(optimizer) {
  std::map<std::string, bool> filter, weight, trainable;
  for (const auto& node : graph.nodes) {
    for (const auto& [role, name] : node.params) {
      const bool convolves = node.op == "conv2d" || node.op == "conv2d_transpose" || node.op == "conv1d";
      if (convolves && role == "kernel") filter[name] = true;
      // Dense products read their weights in the compute dtype (attention's four projections are dense products).
      const bool multiplies = convolves || node.op == "dense" || node.op == "multi_head_attention";
      if (multiplies && (role.ends_with("kernel") || role.ends_with("bias"))) weight[name] = true;
      // Frozen only when every node that reads it says so (as the cpu backend decides).
      bool listed = true;
      if (node.attrs.contains("trainable") && node.attrs["trainable"].is_array()) {
        listed = false;
        for (const auto& r : node.attrs["trainable"]) listed |= r == role;
      }
      trainable[name] = (trainable.count(name) && trainable[name]) || listed;
    }
  }
  for (const auto& spec : graph.params) {
    auto p = std::make_unique<Parameter>();
    p->name = spec.name;
    p->shape = spec.shape;
    p->count = product(spec.shape);
    p->filter = filter.count(spec.name) > 0;
    if (p->filter && spec.shape.size() != 4 && spec.shape.size() != 3)
      invalid("graph: #/params/" + spec.name + ": a convolution's kernel is [kh, kw, in, out] (conv1d: [k, in, out]), got " +
              shape_string(spec.shape));
    p->compute_dtype = half && weight.count(spec.name) ? CUDA_R_16F : CUDA_R_32F;
    p->trainable = !trainable.count(spec.name) || trainable[spec.name];
    const size_t bytes = static_cast<size_t>(p->count) * sizeof(float);
    p->value = Buffer(device, bytes, "parameter " + spec.name);
    check(cudaMemsetAsync(p->value.get(), 0, bytes, device.stream()), "cudaMemsetAsync", "parameter " + spec.name);
    if (p->filter || p->compute_dtype != CUDA_R_32F)
      p->copy = Buffer(device, static_cast<size_t>(p->count) * element_bytes(p->compute_dtype),
                       "parameter " + spec.name + " (compute copy)");
    if (p->trainable) {
      p->grad = SharedFloats(static_cast<size_t>(p->count), "gradient of " + spec.name);
      std::memset(p->grad.get(), 0, bytes);
      DLTensor& v = p->grad_view.dl_tensor;
      v.data = p->grad.get();
      v.device = {kDLCUDAManaged, device.settings().ordinal};
      v.ndim = static_cast<int32_t>(p->shape.size());
      v.dtype = ramjet::dtype_of<float>();
      v.shape = p->shape.data();
      for (size_t k = 0; k < slot_names().size(); ++k) {
        p->slots.emplace_back(device, bytes, "optimizer slot of " + spec.name);
        check(cudaMemsetAsync(p->slots.back().get(), 0, bytes, device.stream()), "cudaMemsetAsync", "optimizer slots");
      }
    }
    by_name_[p->name] = p.get();
    params_.push_back(std::move(p));
  }
  std::vector<ParameterBuffers> buffers;
  for (const auto& p : params_) {
    if (!p->trainable) continue;
    p->update_index = static_cast<int>(buffers.size());
    ParameterBuffers b;
    b.value = p->value.as<float>();
    b.gradient = p->grad.get();
    if (!p->slots.empty()) b.slot0 = p->slots[0].as<float>();
    if (p->slots.size() > 1) b.slot1 = p->slots[1].as<float>();
    b.count = p->count;
    b.decay = optimizer.decay_all || p->shape.size() >= 2;
    buffers.push_back(b);
  }
  multi_ = std::make_unique<MultiTensor>(buffers);
  nonfinite_flag_ = Buffer(device, sizeof(int), "the overflow flag");
  refresh_copies();
}

std::vector<std::string> Parameters::slot_names() const {
  switch (optimizer_.type) {
    case ramjet::OptimizerSpec::Type::sgd: return optimizer_.momentum > 0 ? std::vector<std::string>{"momentum"} : std::vector<std::string>{};
    case ramjet::OptimizerSpec::Type::adam:
    case ramjet::OptimizerSpec::Type::adamw: return {"m", "v"};
    case ramjet::OptimizerSpec::Type::rmsprop: break;  // refused by the options
  }
  return {};
}

Parameter& Parameters::get(const std::string& name) {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) invalid("graph: parameter '" + name + "' is not declared in #/params");
  return *it->second;
}

const void* Parameters::compute(const Parameter& p) const { return p.copy.bytes() ? p.copy.get() : p.value.get(); }

namespace {
// conv1d's kernel [k, in, out] is a one-row image kernel [1, k, in, out].
FilterShape filter_shape(const Parameter& p) {
  if (p.shape.size() == 3) return {1, p.shape[0], p.shape[1], p.shape[2]};
  return {p.shape[0], p.shape[1], p.shape[2], p.shape[3]};
}
}  // namespace

void Parameters::refresh_copies() {
  for (const auto& p : params_) {
    if (p->filter) filter_from_keras(p->value.as<float>(), p->copy.get(), filter_shape(*p), p->compute_dtype, device_.stream());
    else if (p->compute_dtype == CUDA_R_16F) to_half(p->value.as<float>(), p->copy.get(), p->count, device_.stream());
  }
}

void Parameters::begin_backward(bool accumulate) {
  accumulate_ = accumulate;
  for (const auto& p : params_) p->written = false;
}

namespace {
// The product lands in the float32 gradient itself: same dtype and layout, nothing there to add to.
bool writes_directly(const Parameter& p, bool accumulate) {
  return p.compute_dtype == CUDA_R_32F && !p.filter && !accumulate && !p.written;
}
}  // namespace

void* Parameters::grad_target(Parameter& p) {
  // A frozen parameter's product still has somewhere to go (the libraries and kernels write it whenever the layer's
  // other gradients are wanted); it is never committed.
  if (p.trainable && writes_directly(p, accumulate_)) return p.grad.get();
  const size_t bytes = static_cast<size_t>(p.count) * element_bytes(p.compute_dtype);
  if (p.scratch.bytes() < bytes) p.scratch = Buffer(device_, bytes, "gradient product of " + p.name);
  return p.scratch.get();
}

void Parameters::grad_commit(Parameter& p) {
  if (!p.trainable) return;
  const bool add = accumulate_ || p.written;
  if (p.filter)
    filter_gradient_to_keras(p.scratch.get(), p.grad.get(), filter_shape(p), p.compute_dtype, add, device_.stream());
  else if (!writes_directly(p, accumulate_))
    to_float(p.scratch.get(), p.grad.get(), p.count, p.compute_dtype, add, device_.stream());
  p.written = true;
}

void Parameters::end_backward() {
  for (const auto& p : params_)
    if (p->trainable && !p->written && !accumulate_)
      check(cudaMemsetAsync(p->grad.get(), 0, static_cast<size_t>(p->count) * sizeof(float), device_.stream()),
            "cudaMemsetAsync", "gradient of " + p->name);
}

bool Parameters::gradients_nonfinite() {
  clear_nonfinite();
  multi_->find_nonfinite(nonfinite_flag_.as<int>(), device_.stream());
  return nonfinite_found();
}

void Parameters::clear_nonfinite() {
  check(cudaMemsetAsync(nonfinite_flag_.get(), 0, sizeof(int), device_.stream()), "cudaMemsetAsync", "overflow flag");
}

void Parameters::check_nonfinite(const Parameter& p) {
  if (p.update_index >= 0) multi_->find_nonfinite(p.update_index, nonfinite_flag_.as<int>(), device_.stream());
}

bool Parameters::nonfinite_found() {
  int flag = 0;
  check(cudaMemcpyAsync(&flag, nonfinite_flag_.get(), sizeof flag, cudaMemcpyDeviceToHost, device_.stream()),
        "cudaMemcpyAsync", "overflow flag");
  device_.wait("the overflow check");
  return flag != 0;
}

void Parameters::update(const ramjet_update_args& args) {
  if (args.step < 1) invalid("optimizer_update: step must be >= 1 (it is 1-based)");
  if (!std::isfinite(args.learning_rate) || !std::isfinite(args.gradient_scale))
    invalid("optimizer_update: learning_rate and gradient_scale must be finite");
  UpdateStep step;
  switch (optimizer_.type) {
    case ramjet::OptimizerSpec::Type::sgd:
      step.rule = optimizer_.momentum > 0 ? UpdateRule::sgd_momentum : UpdateRule::sgd;
      break;
    case ramjet::OptimizerSpec::Type::adam: step.rule = UpdateRule::adam; break;
    default: step.rule = UpdateRule::adamw; break;
  }
  step.learning_rate = args.learning_rate;
  step.gradient_scale = args.gradient_scale;
  step.weight_decay = static_cast<float>(optimizer_.weight_decay);
  step.momentum = static_cast<float>(optimizer_.momentum);
  step.nesterov = optimizer_.nesterov;
  step.beta_1 = optimizer_.beta_1;
  step.beta_2 = optimizer_.beta_2;
  step.epsilon = optimizer_.epsilon;
  step.step = args.step;
  multi_->update(step, device_.stream());
  refresh_copies();
}

void Parameters::get(std::string_view which, ramjet::Example& out) {
  device_.wait("get_state");
  auto copy_out = [&](const Parameter& p, const void* device_data, const std::string& name) {
    std::vector<float> raw(static_cast<size_t>(p.count));
    check(cudaMemcpyAsync(raw.data(), device_data, raw.size() * sizeof(float), cudaMemcpyDeviceToHost,
                          device_.stream()),
          "cudaMemcpyAsync", "get_state " + name);
    device_.wait("get_state " + name);
    ramjet::Tensor t = ramjet::Tensor::zeros(ramjet::dtype_of<float>(), std::span<const int64_t>(p.shape));
    std::memcpy(t.data<float>(), raw.data(), raw.size() * sizeof(float));
    out.set(name, std::move(t));
  };
  if (which == RAMJET_STATE_PARAMETERS) {
    for (const auto& p : params_) copy_out(*p, p->value.get(), p->name);
  } else if (which == RAMJET_STATE_GRADIENTS) {
    for (const auto& p : params_)
      if (p->trainable) out.set(p->name, ramjet::Tensor(&p->grad_view));  // a view: no deleter
  } else if (which == RAMJET_STATE_OPTIMIZER) {
    const auto names = slot_names();
    for (const auto& p : params_)
      for (size_t k = 0; k < p->slots.size(); ++k) copy_out(*p, p->slots[k].get(), p->name + "/" + names[k]);
  } else if (which != RAMJET_STATE_BUFFERS) {
    invalid("get_state: unknown state '" + std::string(which) + "' (parameters, gradients, optimizer, buffers)");
  }
}

void Parameters::set(std::string_view which, ramjet::Example& values) {
  const std::string what = "set_state(" + std::string(which) + "): ";
  if (which != RAMJET_STATE_PARAMETERS && which != RAMJET_STATE_GRADIENTS && which != RAMJET_STATE_OPTIMIZER &&
      which != RAMJET_STATE_BUFFERS)
    invalid("set_state: unknown state '" + std::string(which) + "' (parameters, gradients, optimizer, buffers)");
  struct Copy {
    Parameter* p;
    void* target;
    const float* source;
    bool host_target;
  };
  // Everything is checked before anything changes.
  std::vector<Copy> copies;
  const auto names = slot_names();
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string name(values.name(i));
    Copy c{nullptr, nullptr, nullptr, false};
    if (which == RAMJET_STATE_OPTIMIZER) {
      const auto slash = name.rfind('/');
      if (slash != std::string::npos && by_name_.count(name.substr(0, slash))) {
        Parameter& p = *by_name_[name.substr(0, slash)];
        for (size_t k = 0; k < p.slots.size(); ++k)
          if (names[k] == name.substr(slash + 1)) c = {&p, p.slots[k].get(), nullptr, false};
      }
    } else if (which != RAMJET_STATE_BUFFERS && by_name_.count(name)) {
      Parameter& p = *by_name_[name];
      if (which == RAMJET_STATE_PARAMETERS) c = {&p, p.value.get(), nullptr, false};
      else if (p.trainable) c = {&p, p.grad.get(), nullptr, true};
    }
    if (c.p == nullptr) invalid(what + "the program has no " + std::string(which) + " entry named '" + name + "'");
    c.source = host_floats(*values.at(i), c.p->shape, what + "'" + name + "'");
    copies.push_back(c);
  }
  device_.wait("set_state");
  for (const Copy& c : copies) {
    const size_t bytes = static_cast<size_t>(c.p->count) * sizeof(float);
    if (c.host_target) std::memcpy(c.target, c.source, bytes);
    else  // on the program's stream, which does not wait for the legacy default stream's copies
      check(cudaMemcpyAsync(c.target, c.source, bytes, cudaMemcpyHostToDevice, device_.stream()), "cudaMemcpyAsync",
            what + c.p->name);
  }
  if (which == RAMJET_STATE_PARAMETERS) refresh_copies();
  device_.wait("set_state");  // the host may free `values` once this returns
}

}  // namespace cuda_plugin
