#include "own_activation.hpp"

#include <ramjet/sdk/error.hpp>

namespace cuda_plugin {

ActivationChoice activation_of(const NodeSpec& node) {
  ActivationChoice c;
  try {
    c.kind = activation_named(node.attr_string("activation", "linear"));
  } catch (const ramjet::Error& e) {
    node.fail(e.status(), e.what());
  }
  if (c.kind == Activation::elu) c.alpha = static_cast<float>(node.attr_number("alpha", 1.0));
  if (c.kind == Activation::leaky_relu) c.alpha = static_cast<float>(node.attr_number("negative_slope", 0.2));
  return c;
}

OwnActivation::OwnActivation(const NodeSpec& node, Build& b, bool can_fuse_relu)
    : dtype_(b.dtype), elements_(b.output.elements) {
  const ActivationChoice choice = activation_of(node);
  kind_ = choice.kind;
  alpha_ = choice.alpha;
  fused_relu_ = kind_ == Activation::relu && can_fuse_relu;
  if (separate()) pre_ = b.buffer(elements_, "layer " + node.name + " pre-activation");
  if (kind_ != Activation::linear && b.backward) dpre_ = b.buffer(elements_, "layer " + node.name + " pre-activation gradient");
}

void OwnActivation::forward(const Pass& pass, Value& out) const {
  if (separate()) activation_forward(kind_, alpha_, pre_.get(), out.data.get(), elements_, dtype_, pass.device.stream());
}

const void* OwnActivation::product_gradient(const Pass& pass, Value& out) const {
  if (kind_ == Activation::linear) return out.grad.get();
  // relu's derivative reads the same from its output as from its input (both positive at the same places).
  const void* x = fused_relu_ ? out.data.get() : pre_.get();
  activation_backward(kind_, alpha_, x, out.grad.get(), dpre_.get(), elements_, dtype_, pass.device.stream());
  return dpre_.get();
}

}  // namespace cuda_plugin
