// The standalone activation node, and the activation that follows conv2d and dense.
#include "activation.hpp"

#include "../edge.hpp"
#include "layer_skeletons.hpp"
#include "registry.hpp"

namespace onednn {

ActivationSpec activation_spec(const std::string& name, const NodeSpec& node) {
  using a = dnnl::algorithm;
  ActivationSpec s;
  s.name = name;
  if (name == "linear") s.identity = true;
  else if (name == "relu") s = {name, false, a::eltwise_relu, a::eltwise_relu_use_dst_for_bwd, 0.f, 0.f, true};
  else if (name == "relu6") s = {name, false, a::eltwise_clip_v2, a::eltwise_clip_v2_use_dst_for_bwd, 0.f, 6.f, true};
  else if (name == "sigmoid") s = {name, false, a::eltwise_logistic, a::eltwise_logistic_use_dst_for_bwd, 0.f, 0.f, true};
  else if (name == "tanh") s = {name, false, a::eltwise_tanh, a::eltwise_tanh_use_dst_for_bwd, 0.f, 0.f, true};
  else if (name == "elu")
    s = {name, false, a::eltwise_elu, a::eltwise_elu_use_dst_for_bwd, static_cast<float>(node.attr_number("alpha", 1.0)),
         0.f, true};
  // Keras's activation function leans 0.2 below zero; a leaky_relu layer says its own negative_slope.
  else if (name == "leaky_relu")
    s = {name, false, a::eltwise_relu, a::eltwise_relu_use_dst_for_bwd,
         static_cast<float>(node.attr_number("negative_slope", 0.2)), 0.f, true};
  else if (name == "gelu") s = {name, false, a::eltwise_gelu_erf, a::eltwise_gelu_erf, 0.f, 0.f, false};
  else if (name == "swish" || name == "silu") s = {name, false, a::eltwise_swish, a::eltwise_swish, 1.f, 0.f, false};
  else if (name == "softplus") s = {name, false, a::eltwise_soft_relu, a::eltwise_soft_relu, 0.f, 0.f, false};
  else
    node.fail(RAMJET_ERR_UNSUPPORTED, "activation '" + name +
                                          "' is not supported (linear, relu, relu6, sigmoid, tanh, gelu, elu, swish, "
                                          "softplus, leaky_relu)");
  return s;
}

PostActivation::PostActivation(const ActivationSpec& spec)
    : spec_(spec), fused_(!spec.identity && spec.backward_uses_dst) {}

void PostActivation::add_to(dnnl::primitive_attr& attr) const {
  if (!fused_) return;
  dnnl::post_ops ops;
  ops.append_eltwise(1.0f, spec_.forward, spec_.alpha, spec_.beta);
  attr.set_post_ops(ops);
}

dnnl::memory PostActivation::finish(LayerBuilder& builder, const md& dst) {
  builder.define_output(dst);
  out_ = builder.output().mem;
  return build(builder, dst);
}

dnnl::memory PostActivation::finish(LayerBuilder& builder, const md& dst, const md& value_desc) {
  builder.define_output(value_desc);
  out_ = dnnl::memory(dst, builder.engine(), builder.output().mem.get_data_handle());
  return build(builder, dst);
}

dnnl::memory PostActivation::build(LayerBuilder& builder, const md& dst) {
  const bool backward = builder.backward() && builder.output().needs_grad;
  if (spec_.identity) return out_;
  if (!fused_) {
    pre_ = builder.transient(dst);
    const dnnl::eltwise_forward::primitive_desc fwd_pd(
        {builder.forward_kind(), spec_.forward, dst, spec_.alpha, spec_.beta}, builder.engine());
    fwd_ = dnnl::eltwise_forward(fwd_pd);
    fwd_args_ = {{DNNL_ARG_SRC, pre_}, {DNNL_ARG_DST, out_}};
    if (backward) {
      const dnnl::eltwise_backward::primitive_desc bwd_pd({spec_.backward, dst, dst, spec_.alpha, spec_.beta},
                                                          builder.engine(), fwd_pd);
      bwd_ = dnnl::eltwise_backward(bwd_pd);
      bwd_args_ = {{DNNL_ARG_SRC, pre_}};
    }
    return pre_;
  }
  if (backward) {  // the hint describes the forward the post-op did, in its use-dst form
    const dnnl::eltwise_forward::primitive_desc hint(
        {dnnl::prop_kind::forward_training, spec_.backward, dst, spec_.alpha, spec_.beta}, builder.engine());
    const dnnl::eltwise_backward::primitive_desc bwd_pd({spec_.backward, dst, dst, spec_.alpha, spec_.beta},
                                                        builder.engine(), hint);
    bwd_ = dnnl::eltwise_backward(bwd_pd);
    bwd_args_ = {{DNNL_ARG_DST, out_}};
  }
  return out_;
}

void PostActivation::forward(const Exec& exec) const {
  if (!spec_.identity && !fused_) exec.run(fwd_, fwd_args_);
}

const dnnl::memory& PostActivation::backward(const Exec& exec, const dnnl::memory& diff_out) {
  if (spec_.identity) return diff_out;
  bwd_args_[DNNL_ARG_DIFF_DST] = diff_out;
  bwd_args_[DNNL_ARG_DIFF_SRC] = diff_out;
  exec.run(bwd_, bwd_args_);
  return diff_out;
}

namespace {

// A standalone activation node: {"op": "activation", "attrs": {"activation": "relu"}}.
class Activation : public ElementwiseLayer {
 public:
  Activation(const NodeSpec& node, LayerBuilder& b) {
    spec_ = activation_spec(node.attr_string("activation", "linear"), node);
    if (b.input_count() != 1) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "activation takes one input");
    b.check_shape(b.input(0).shape);
    const md desc = b.compute_desc(b.input(0));
    in_ = Edge(b, b.input(0), desc);
    // linear is the identity: one eltwise pass with alpha 1 keeps the layer uniform.
    const dnnl::algorithm fwd_alg = spec_.identity ? dnnl::algorithm::eltwise_linear
                                                   : (spec_.backward_uses_dst ? spec_.backward : spec_.forward);
    const float alpha = spec_.identity ? 1.0f : spec_.alpha;
    const dnnl::eltwise_forward::primitive_desc fwd_pd({b.forward_kind(), fwd_alg, desc, alpha, spec_.beta},
                                                       b.engine());
    fwd_ = dnnl::eltwise_forward(fwd_pd);
    b.define_output(fwd_pd.dst_desc());
    fwd_args_ = {{DNNL_ARG_SRC, in_.mem()}, {DNNL_ARG_DST, b.output().mem}};
    out_ = &b.output();
    if (b.backward() && in_.needs_grad()) {
      const dnnl::algorithm bwd_alg = spec_.identity ? dnnl::algorithm::eltwise_linear : spec_.backward;
      const dnnl::eltwise_backward::primitive_desc bwd_pd({bwd_alg, desc, desc, alpha, spec_.beta}, b.engine(),
                                                          fwd_pd);
      bwd_ = dnnl::eltwise_backward(bwd_pd);
      if (spec_.backward_uses_dst) bwd_args_ = {{DNNL_ARG_DST, out_->mem}};
      else bwd_args_ = {{DNNL_ARG_SRC, in_.mem()}};
    }
  }

 private:
  ActivationSpec spec_;
};

}  // namespace

std::unique_ptr<Layer> make_activation(const NodeSpec& node, LayerBuilder& builder) {
  // Keras's Activation("softmax") is the softmax node.
  if (node.attr_string("activation", "linear") == "softmax") return make_softmax(node, builder);
  return std::make_unique<Activation>(node, builder);
}

}  // namespace onednn
