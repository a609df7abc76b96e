#include "plan.hpp"

#include "cuda_check.hpp"
#include "elementwise.hpp"

#include <ramjet/sdk/dtype.hpp>
#include <cstring>
#include <ramjet/sdk/tensor.hpp>

namespace cuda_plugin {
namespace {

using ramjet::ir::product;
using ramjet::ir::shape_string;

Shape with_batch(int64_t batch, const Shape& shape) {
  Shape full{batch};
  full.insert(full.end(), shape.begin(), shape.end());
  return full;
}

}  // namespace

Plan::Plan(Device& device, Parameters& params, const ramjet::ir::Graph& graph, int64_t batch, cudaDataType_t dtype,
           bool backward)
    : device_(device), params_(params), graph_(graph), batch_(batch), dtype_(dtype), backward_(backward) {
  const size_t element = element_bytes(dtype);
  size_t largest_io = 0;
  auto add_value = [&](const std::string& name, const Shape& shape, size_t bytes_each) -> Value& {
    auto v = std::make_unique<Value>();
    v->name = name;
    v->shape = shape;
    v->elements = batch * product(shape);
    v->data = Buffer(device, static_cast<size_t>(v->elements) * bytes_each, "value " + name);
    by_name_[name] = v.get();
    values_.push_back(std::move(v));
    return *values_.back();
  };
  for (const auto& in : graph.inputs) {
    const bool ids = ramjet::same_dtype(in.dtype, ramjet::dtype_of<int32_t>());
    if (!ids && !ramjet::same_dtype(in.dtype, ramjet::dtype_of<float>()))
      throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, "graph: input '" + in.name + "' is " + ramjet::dtype_name(in.dtype) +
                                                      "; the cuda backend takes float32 inputs and int32 token IDs");
    if (ids) {
      Value& v = add_value(in.name, in.shape, sizeof(int32_t));
      v.token_ids = true;
      v.host_ids.resize(static_cast<size_t>(v.elements));
      continue;
    }
    largest_io = std::max(largest_io, static_cast<size_t>(add_value(in.name, in.shape, element).elements));
  }
  for (const auto& node : graph.nodes) {
    Build build{device, params, batch, dtype, backward, {}, add_value(node.name, node.shape, element)};
    for (const auto& name : node.inputs) {
      const Value& in = *by_name_.at(name);
      if (in.token_ids && node.op != "embedding")
        node.fail(RAMJET_ERR_INVALID_ARGUMENT, "input '" + name + "' holds int32 token IDs, which only an embedding reads");
      build.inputs.push_back(by_name_.at(name));
      build.output.wants_grad |= in.wants_grad;
    }
    LayerFactory make = find_layer(node.op);
    if (make == nullptr) node.fail(RAMJET_ERR_UNSUPPORTED, "the cuda backend does not support op '" + node.op + "'");
    for (const auto& [role, name] : node.params) build.output.wants_grad |= params.get(name).trainable;
    layers_.push_back(make(node, build));
    for (Parameter* p : layers_.back()->parameters()) ++users_[p];
  }
  for (const auto& name : graph.outputs)
    largest_io = std::max(largest_io, static_cast<size_t>(by_name_.at(name)->elements));
  if (dtype == CUDA_R_16F) staging_ = Buffer(device, largest_io * sizeof(float), "float32 inputs and outputs");
  if (graph.loss) loss_.emplace(*graph.loss, device, *by_name_.at(graph.loss->input), batch, dtype);
  if (backward)
    for (const auto& v : values_)
      if (v->wants_grad) v->grad = Buffer(device, v->data.bytes(), "gradient of " + v->name);
}

void Plan::load_inputs(ramjet::Example& inputs) {
  for (const auto& spec : graph_.inputs) {
    DLTensor* t = inputs.find(spec.name);
    if (t == nullptr)
      throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "forward: the inputs have no tensor named '" + spec.name + "'");
    const Shape full = with_batch(batch_, spec.shape);
    if (by_name_.at(spec.name)->token_ids) {
      load_ids(*by_name_.at(spec.name), *t, full);
      continue;
    }
    if (t->ndim != static_cast<int32_t>(full.size()) || !std::equal(full.begin(), full.end(), t->shape) ||
        t->device.device_type != kDLCPU || !ramjet::same_dtype(t->dtype, ramjet::dtype_of<float>()) ||
        !ramjet::is_contiguous(*t))
      throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "forward: input '" + spec.name +
                                                           "' must be a contiguous float32 CPU tensor of shape " +
                                                           shape_string(full));
    Value& v = *by_name_.at(spec.name);
    const void* host = static_cast<const char*>(t->data) + t->byte_offset;
    const size_t bytes = static_cast<size_t>(v.elements) * sizeof(float);
    void* target = dtype_ == CUDA_R_16F ? staging_.get() : v.data.get();
    check(cudaMemcpyAsync(target, host, bytes, cudaMemcpyHostToDevice, device_.stream()), "cudaMemcpyAsync",
          "input " + spec.name);
    if (dtype_ == CUDA_R_16F) to_half(staging_.as<float>(), v.data.get(), v.elements, device_.stream());
  }
}

void Plan::load_ids(Value& v, const DLTensor& t, const Shape& full) {
  if (t.ndim != static_cast<int32_t>(full.size()) || !std::equal(full.begin(), full.end(), t.shape) ||
      t.device.device_type != kDLCPU || !ramjet::same_dtype(t.dtype, ramjet::dtype_of<int32_t>()) ||
      !ramjet::is_contiguous(t))
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "forward: input '" + v.name +
                                                         "' must be a contiguous int32 CPU tensor of token IDs, shape " +
                                                         shape_string(full));
  std::memcpy(v.host_ids.data(), static_cast<const char*>(t.data) + t.byte_offset, v.host_ids.size() * sizeof(int32_t));
  check(cudaMemcpyAsync(v.data.get(), v.host_ids.data(), v.host_ids.size() * sizeof(int32_t), cudaMemcpyHostToDevice,
                        device_.stream()),
        "cudaMemcpyAsync", "token IDs " + v.name);
}

void Plan::forward(const Pass& pass) {
  for (auto& layer : layers_) layer->forward(pass);
}

ramjet::Tensor Plan::to_host(const Value& v, const std::string& what) {
  const Shape full = with_batch(batch_, v.shape);
  ramjet::Tensor t = ramjet::Tensor::zeros(ramjet::dtype_of<float>(), std::span<const int64_t>(full));
  const size_t bytes = static_cast<size_t>(v.elements) * sizeof(float);
  const void* source = v.data.get();
  Buffer wide;  // a tapped value may be larger than the inputs and outputs staging_ was sized for
  if (dtype_ == CUDA_R_16F) {
    if (staging_.bytes() < bytes) wide = Buffer(device_, bytes, "float32 copy of " + what);
    float* target = wide.get() != nullptr ? wide.as<float>() : staging_.as<float>();
    to_float(v.data.get(), target, v.elements, CUDA_R_16F, false, device_.stream());
    source = target;
  }
  check(cudaMemcpyAsync(t.data<float>(), source, bytes, cudaMemcpyDeviceToHost, device_.stream()), "cudaMemcpyAsync",
        what);
  device_.wait(what);
  return t;
}

ramjet::Tensor Plan::ids_tensor(const Value& v) const {
  const Shape full = with_batch(batch_, v.shape);
  ramjet::Tensor t = ramjet::Tensor::zeros(ramjet::dtype_of<int32_t>(), std::span<const int64_t>(full));
  std::memcpy(t.data<int32_t>(), v.host_ids.data(), v.host_ids.size() * sizeof(int32_t));
  return t;
}

void Plan::write_outputs(ramjet::Example& outputs) {
  for (const auto& name : graph_.outputs) outputs.set(name, to_host(*by_name_.at(name), "output " + name));
}

void Plan::run_taps(const std::vector<std::string>& names, ramjet_tap_fn fn, void* user) {
  for (const auto& name : names) {
    const Value& v = *by_name_.at(name);
    ramjet::Tensor t = v.token_ids ? ids_tensor(v) : to_host(v, "tap " + name);
    // The host's tap keeps its own error details (through `user`); a failure still stops the forward here.
    const ramjet_status status = fn(user, name.c_str(), &t.dl(), nullptr);
    if (status != RAMJET_OK) throw ramjet::Error(status, "forward: the tap on '" + name + "' failed");
  }
}

void Plan::backward(const Pass& pass, const ramjet_backward_args& args) {
  for (const auto& v : values_) v->grad_written = false;
  params_.begin_backward(args.accumulate != 0);
  std::map<const Parameter*, int> pending = users_;
  loss_->backward(args.loss_scale);
  for (size_t i = layers_.size(); i-- > 0;) {
    Value& out = *by_name_.at(graph_.nodes[i].name);
    if (!out.wants_grad || !out.grad_written) continue;  // no gradient reaches it: nothing to deliver
    layers_[i]->backward(pass);
    if (args.grad_ready == nullptr) continue;
    std::vector<Parameter*> done;
    for (Parameter* p : layers_[i]->parameters())
      if (p->trainable && --pending[p] == 0) done.push_back(p);
    if (done.empty()) continue;
    device_.wait("backward of " + graph_.nodes[i].name);  // the host reads the gradients it is handed
    for (Parameter* p : done) args.grad_ready(args.grad_ready_user, p->name.c_str(), &p->grad_view.dl_tensor);
  }
  params_.end_backward();
  device_.wait("backward");
  if (args.grad_ready == nullptr) return;
  // Gradients no layer completed (unused parameters, layers no gradient reached) are final now too.
  for (const auto& p : params_.all()) {
    if (!p->trainable) continue;
    auto it = pending.find(p.get());
    if (it == pending.end() || it->second > 0) args.grad_ready(args.grad_ready_user, p->name.c_str(), &p->grad_view.dl_tensor);
  }
}

}  // namespace cuda_plugin
