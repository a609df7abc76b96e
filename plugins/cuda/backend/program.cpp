#include "program.hpp"

#include <cmath>
#include <set>

namespace cuda_plugin {
namespace {

void write_scalar(ramjet::Example& out, const char* name, float v) {
  ramjet::Tensor t = ramjet::Tensor::zeros(ramjet::dtype_of<float>(), std::span<const int64_t>());
  *t.data<float>() = v;
  out.set(name, std::move(t));
}

void write_scalar(ramjet::Example& out, const char* name, int32_t v) {
  ramjet::Tensor t = ramjet::Tensor::zeros(ramjet::dtype_of<int32_t>(), std::span<const int64_t>());
  *t.data<int32_t>() = v;
  out.set(name, std::move(t));
}

}  // namespace

Program::Program(Device& device, ramjet::ir::Graph graph, CompileOptions options)
    : device_(device), graph_(std::move(graph)), options_(options),
      params_(device, graph_, options.half, options.optimizer) {
  plan_for(options_.batch, graph_.loss.has_value());  // a graph the backend cannot run fails at compile
}

Plan& Program::plan_for(int64_t batch, bool training) {
  auto& plan = plans_[{batch, training}];
  if (!plan)
    plan = std::make_unique<Plan>(device_, params_, graph_, batch, options_.half ? CUDA_R_16F : CUDA_R_32F, training);
  return *plan;
}

void Program::forward(const ramjet_forward_args& args, ramjet::Example& inputs, ramjet::Example& outputs) {
  device_.activate();
  trained_ = nullptr;
  // The batch, and every input's rank and batch, before a plan is built for it (Plan::load_inputs checks the rest).
  int64_t batch = -1;
  for (const auto& spec : graph_.inputs) {
    const DLTensor* t = inputs.find(spec.name);
    if (t == nullptr)
      throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "forward: the inputs have no tensor named '" + spec.name + "'");
    if (t->ndim != static_cast<int32_t>(spec.shape.size()) + 1 || t->shape[0] < 1 || (batch >= 0 && t->shape[0] != batch))
      throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "forward: input '" + spec.name + "' must be [batch, " +
                                                           ramjet::ir::shape_string(spec.shape).substr(1) +
                                                           " with one batch for every input");
    batch = t->shape[0];
  }
  DLTensor* labels = graph_.loss ? inputs.find(graph_.loss->labels) : nullptr;
  const bool training = args.training != 0 && labels != nullptr;
  Plan& plan = plan_for(batch, training);
  plan.load_inputs(inputs);
  const Pass pass{device_, args.training != 0, args.seed};
  plan.forward(pass);
  plan.write_outputs(outputs);
  if (tap_fn_ != nullptr) plan.run_taps(taps_, tap_fn_, tap_user_);
  if (labels != nullptr) {
    const LossValues loss = plan.loss()->forward(*labels);
    write_scalar(outputs, RAMJET_OUTPUT_LOSS, loss.loss);
    if (plan.loss()->counts_correct()) {
      write_scalar(outputs, RAMJET_OUTPUT_CORRECT, loss.correct);
      write_scalar(outputs, RAMJET_OUTPUT_COUNTED, loss.counted);
    }
  }
  if (training) trained_ = &plan, trained_seed_ = args.seed;
}

void Program::backward(const ramjet_backward_args& args) {
  if (trained_ == nullptr) {
    const std::string labels = graph_.loss ? "'" + graph_.loss->labels + "'" : "(the graph has no loss)";
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "backward: no training forward to back-propagate; call forward "
                                                     "with training = 1 and the labels " + labels + " first");
  }
  device_.activate();
  if (!std::isfinite(args.loss_scale))
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "backward: loss_scale must be finite");
  trained_->backward(Pass{device_, true, trained_seed_}, args);
  if (args.out_found_nonfinite != nullptr) {
    // With grad_ready, each gradient was checked before it was handed over (Plan::backward): a strategy may be
    // all-reducing it in place by now.
    const bool found = args.grad_ready != nullptr ? params_.nonfinite_found() : params_.gradients_nonfinite();
    *args.out_found_nonfinite = found ? 1 : 0;
  }
}

void Program::optimizer_update(const ramjet_update_args& args) {
  device_.activate();
  params_.update(args);
}

void Program::get_state(std::string_view which, ramjet::Example& out) {
  device_.activate();
  params_.get(which, out);
}

void Program::set_state(std::string_view which, ramjet::Example& values) {
  device_.activate();
  params_.set(which, values);
}

void Program::set_taps(const std::vector<std::string>& names, ramjet_tap_fn fn, void* user) {
  std::set<std::string> known;
  for (const auto& in : graph_.inputs) known.insert(in.name);
  for (const auto& node : graph_.nodes) known.insert(node.name);
  for (const auto& name : names)
    if (!known.count(name))
      throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "set_taps: the graph has no tensor named '" + name + "'");
  if (!names.empty() && fn == nullptr) throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "set_taps: no tap function");
  taps_ = names;
  tap_fn_ = names.empty() ? nullptr : fn;
  tap_user_ = user;
}

}  // namespace cuda_plugin
