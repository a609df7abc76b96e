// A weighted layer's own activation (the "activation" attribute of dense and conv2d), applied to the layer's
// product: fused into cuBLASLt's epilogue where it can be (relu after a bias), otherwise our kernel over a kept
// pre-activation buffer. Backward turns the output's gradient into the product's.
#pragma once

#include "../layer.hpp"
#include "activation.hpp"

namespace cuda_plugin {

// A node's "activation" attribute and its parameter (elu's alpha, leaky_relu's negative_slope), Keras's defaults.
struct ActivationChoice {
  Activation kind = Activation::linear;
  float alpha = 0.0f;
};
ActivationChoice activation_of(const NodeSpec& node);

class OwnActivation {
 public:
  // `can_fuse_relu`: the layer's product can end in relu itself (a dense layer with a bias).
  OwnActivation(const NodeSpec& node, Build& b, bool can_fuse_relu);

  bool fused_relu() const { return fused_relu_; }
  // Where the layer's product goes: the output itself, or the pre-activation buffer.
  void* product_target(Value& out) const { return separate() ? pre_.get() : out.data.get(); }
  void forward(const Pass& pass, Value& out) const;
  // The gradient of the product, from out.grad (out.grad itself when there is no activation).
  const void* product_gradient(const Pass& pass, Value& out) const;

 private:
  bool separate() const { return kind_ != Activation::linear && !fused_relu_; }

  Activation kind_ = Activation::linear;
  float alpha_ = 0.0f;
  bool fused_relu_ = false;
  cudaDataType_t dtype_;
  int64_t elements_ = 0;
  Buffer pre_;    // the product before the activation (separate activations)
  Buffer dpre_;   // its gradient (training)
};

}  // namespace cuda_plugin
