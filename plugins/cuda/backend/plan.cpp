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
  step_seed_ = Buffer(device, sizeof(uint64_t), "the step's seed");
  size_t largest_output = 0;
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
    add_value(in.name, in.shape, element);
  }
  for (const auto& node : graph.nodes) {
    Build build{device, params, batch, dtype, backward, {}, add_value(node.name, node.shape, element),
                step_seed_.as<uint64_t>()};
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
    largest_output = std::max(largest_output, static_cast<size_t>(by_name_.at(name)->elements));
  if (dtype == CUDA_R_16F) staging_ = Buffer(device, largest_output * sizeof(float), "float32 outputs");
  if (graph.loss) loss_.emplace(*graph.loss, device, *by_name_.at(graph.loss->input), batch, dtype);
  if (backward)
    for (const auto& v : values_)
      if (v->wants_grad) v->grad = Buffer(device, v->data.bytes(), "gradient of " + v->name);
  for (size_t i = 0; i < layers_.size(); ++i) {
    const bool replayable = layers_[i]->replayable();
    if (runs_.empty() || runs_.back()->replayable != replayable) {
      runs_.push_back(std::make_unique<Run>());
      runs_.back()->begin = i;
      runs_.back()->replayable = replayable;
    }
    runs_.back()->end = i + 1;
  }
  for (const auto& run : runs_) {  // named once here, not on every step
    const std::string layers = "layers '" + graph.nodes[run->begin].name + "' to '" + graph.nodes[run->end - 1].name +
                               "' (batch " + std::to_string(batch) + ")";
    run->forward_what = {"forward of " + layers, "training forward of " + layers};
    run->backward_what = {"backward of " + layers, "accumulating backward of " + layers};
  }
  gradients_written_.save = [this] {
    std::vector<char> flags;
    for (const auto& v : values_) flags.push_back(v->grad_written ? 1 : 0);
    for (const auto& p : params_.all()) flags.push_back(p->written ? 1 : 0);
    return flags;
  };
  gradients_written_.restore = [this](const std::vector<char>& flags) {
    size_t k = 0;
    for (const auto& v : values_) v->grad_written = flags.at(k++) != 0;
    for (const auto& p : params_.all()) p->written = flags.at(k++) != 0;
  };
  for (const auto& in : graph.inputs) {
    const Value& v = *by_name_.at(in.name);
    if (v.token_ids) continue;
    const size_t bytes = static_cast<size_t>(v.elements) * sizeof(float);
    pinned_.emplace(in.name, PinnedBuffer(bytes, "pinned copy of input " + in.name));
    if (dtype == CUDA_R_16F) wide_inputs_.emplace(in.name, Buffer(device, bytes, "float32 input " + in.name));
  }
}

void Plan::load_inputs(ramjet::Example& inputs) {
  // Every input is checked before any is copied: a bad one leaves nothing half loaded.
  std::vector<std::pair<const DLTensor*, Value*>> given;
  for (const auto& spec : graph_.inputs) {
    const DLTensor* t = inputs.find(spec.name);
    if (t == nullptr)
      throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "forward: the inputs have no tensor named '" + spec.name + "'");
    Value& v = *by_name_.at(spec.name);
    const Shape full = with_batch(batch_, spec.shape);
    const DLDataType dtype = v.token_ids ? ramjet::dtype_of<int32_t>() : ramjet::dtype_of<float>();
    if (t->ndim != static_cast<int32_t>(full.size()) || !std::equal(full.begin(), full.end(), t->shape) ||
        t->device.device_type != kDLCPU || !ramjet::same_dtype(t->dtype, dtype) || !ramjet::is_contiguous(*t))
      throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT,
                          "forward: input '" + spec.name + "' must be a contiguous " +
                              (v.token_ids ? "int32 CPU tensor of token IDs, shape " : "float32 CPU tensor of shape ") +
                              shape_string(full));
    given.emplace_back(t, &v);
  }
  // The host overwrites the pinned copies once the last copy out of them is done; the device overwrites the
  // inputs once the last pass that read them is.
  check(cudaEventSynchronize(inputs_copied_.get()), "cudaEventSynchronize", "the last input copy");
  check(cudaStreamWaitEvent(device_.copy_stream(), inputs_read_.get()), "cudaStreamWaitEvent", "input readers");
  bool copied = false;
  for (const auto& [t, v] : given) {
    const char* host = static_cast<const char*>(t->data) + t->byte_offset;
    if (v->token_ids) {  // kept on the host too, for the embeddings' checks
      std::memcpy(v->host_ids.data(), host, v->host_ids.size() * sizeof(int32_t));
      check(cudaMemcpyAsync(v->data.get(), v->host_ids.data(), v->host_ids.size() * sizeof(int32_t),
                            cudaMemcpyHostToDevice, device_.stream()),
            "cudaMemcpyAsync", "token IDs " + v->name);
      continue;
    }
    const size_t bytes = static_cast<size_t>(v->elements) * sizeof(float);
    const PinnedBuffer& pinned = pinned_.at(v->name);
    std::memcpy(pinned.get(), host, bytes);
    void* target = dtype_ == CUDA_R_16F ? wide_inputs_.at(v->name).get() : v->data.get();
    check(cudaMemcpyAsync(target, pinned.get(), bytes, cudaMemcpyHostToDevice, device_.copy_stream()),
          "cudaMemcpyAsync", "input " + v->name);
    copied = true;
  }
  if (!copied) return;
  check(cudaEventRecord(inputs_copied_.get(), device_.copy_stream()), "cudaEventRecord", "input copies");
  check(cudaStreamWaitEvent(device_.stream(), inputs_copied_.get()), "cudaStreamWaitEvent", "input copies");
  for (const auto& [name, wide] : wide_inputs_) {
    const Value& v = *by_name_.at(name);
    to_half(wide.as<float>(), v.data.get(), v.elements, device_.stream());
  }
}

void Plan::write_step_seed(uint64_t seed) {
  check(cudaEventSynchronize(seed_copied_.get()), "cudaEventSynchronize", "the last seed copy");
  *static_cast<uint64_t*>(host_seed_.get()) = seed;
  check(cudaMemcpyAsync(step_seed_.get(), host_seed_.get(), sizeof seed, cudaMemcpyHostToDevice, device_.stream()),
        "cudaMemcpyAsync", "the step's seed");
  check(cudaEventRecord(seed_copied_.get(), device_.stream()), "cudaEventRecord", "the step's seed");
}

void Plan::forward(const Pass& pass) {
  write_step_seed(pass.seed);
  for (const auto& run : runs_) {
    auto enqueue = [&] {
      for (size_t i = run->begin; i < run->end; ++i) layers_[i]->forward(pass);
    };
    const size_t way = pass.training ? 1 : 0;
    if (run->replayable) run->forward[way].run(device_, enqueue, nullptr, run->forward_what[way]);
    else enqueue();
  }
  check(cudaEventRecord(inputs_read_.get(), device_.stream()), "cudaEventRecord", "input readers");
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

void Plan::backward_layer(size_t i, const Pass& pass) {
  const Value& out = *by_name_.at(graph_.nodes[i].name);
  if (out.wants_grad && out.grad_written) layers_[i]->backward(pass);
}

void Plan::backward(const Pass& pass, const ramjet_backward_args& args) {
  write_step_seed(pass.seed);
  for (const auto& v : values_) v->grad_written = false;
  params_.begin_backward(args.accumulate != 0);
  std::map<const Parameter*, int> pending = users_;
  // A gradient handed over (grad_ready) may be all-reduced in place at once, on another stream: its overflow check
  // is enqueued before it goes, not after backward (Program::backward reads the flag).
  const bool check_as_handed = args.grad_ready != nullptr && args.out_found_nonfinite != nullptr;
  if (check_as_handed) params_.clear_nonfinite();
  loss_->backward(args.loss_scale);
  for (size_t r = runs_.size(); r-- > 0;) {
    Run& run = *runs_[r];
    if (run.replayable && args.grad_ready == nullptr) {  // grad_ready waits between layers: nothing to capture
      const size_t way = args.accumulate != 0 ? 1 : 0;
      run.backward[way].run(
          device_, [&] { for (size_t i = run.end; i-- > run.begin;) backward_layer(i, pass); }, &gradients_written_,
          run.backward_what[way]);
      continue;
    }
    for (size_t i = run.end; i-- > run.begin;) {
      const Value& out = *by_name_.at(graph_.nodes[i].name);
      if (!out.wants_grad || !out.grad_written) continue;  // no gradient reaches it: nothing to deliver
      layers_[i]->backward(pass);
      if (args.grad_ready == nullptr) continue;
      std::vector<Parameter*> done;
      for (Parameter* p : layers_[i]->parameters())
        if (p->trainable && --pending[p] == 0) done.push_back(p);
      if (done.empty()) continue;
      if (check_as_handed)
        for (Parameter* p : done) params_.check_nonfinite(*p);
      device_.wait("backward of " + graph_.nodes[i].name);  // the host reads the gradients it is handed
      for (Parameter* p : done) args.grad_ready(args.grad_ready_user, p->name.c_str(), &p->grad_view.dl_tensor);
    }
  }
  params_.end_backward();
  // Gradients no layer completed (unused parameters, layers no gradient reached) are final now too.
  std::vector<Parameter*> rest;
  if (args.grad_ready != nullptr)
    for (const auto& p : params_.all()) {
      auto it = pending.find(p.get());
      if (p->trainable && (it == pending.end() || it->second > 0)) rest.push_back(p.get());
    }
  if (check_as_handed)
    for (Parameter* p : rest) params_.check_nonfinite(*p);
  check(cudaEventRecord(inputs_read_.get(), device_.stream()), "cudaEventRecord", "input readers");
  device_.wait("backward");
  for (Parameter* p : rest) args.grad_ready(args.grad_ready_user, p->name.c_str(), &p->grad_view.dl_tensor);
}

}  // namespace cuda_plugin
