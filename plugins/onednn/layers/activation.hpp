// Activations: the names the graph IR uses, and PostActivation, the activation that follows a conv2d or dense.
#pragma once

#include "../layer.hpp"

namespace onednn {

struct ActivationSpec {
  std::string name;
  bool identity = false;
  dnnl::algorithm forward{};   // what the forward computes
  dnnl::algorithm backward{};  // the backward's algorithm (a *_use_dst_for_bwd one when backward_uses_dst)
  float alpha = 0.0f, beta = 0.0f;
  bool backward_uses_dst = false;
};

// linear, relu, relu6, sigmoid, tanh, gelu (erf), elu (alpha), swish (silu), softplus, leaky_relu (negative_slope).
// Throws UNSUPPORTED naming the node.
ActivationSpec activation_spec(const std::string& name, const NodeSpec& node);

// Fused into the primitive as a post-op when its backward can work from the output (relu, relu6, sigmoid, tanh,
// elu); otherwise the primitive writes a pre-activation buffer and an eltwise pass follows (gelu, swish,
// softplus), whose backward reads that buffer.
class PostActivation {
 public:
  PostActivation() = default;
  explicit PostActivation(const ActivationSpec& spec);

  // Before the primitive is created: add the post-op to its attributes.
  void add_to(dnnl::primitive_attr& attr) const;
  // After: define the layer's output in the primitive's dst layout; returns the memory the primitive writes.
  dnnl::memory finish(LayerBuilder& builder, const md& dst);
  // The same when the primitive sees the output through another descriptor than the value's (`dst`: rows of a
  // sequence, `value_desc`: the value as the graph sees it; one buffer).
  dnnl::memory finish(LayerBuilder& builder, const md& dst, const md& value_desc);

  // Whether it is the identity: the primitive's output is the layer's, and its gradient the output's.
  bool linear() const { return spec_.identity; }

  void forward(const Exec& exec) const;
  // From d loss / d output, d loss / d pre-activation (computed in place; the output's gradient is not read again).
  const dnnl::memory& backward(const Exec& exec, const dnnl::memory& diff_out);

 private:
  dnnl::memory build(LayerBuilder& builder, const md& dst);

  ActivationSpec spec_;
  bool fused_ = false;
  dnnl::memory out_, pre_;
  dnnl::eltwise_forward fwd_;
  Args fwd_args_;
  dnnl::eltwise_backward bwd_;
  Args bwd_args_;
};

}  // namespace onednn
