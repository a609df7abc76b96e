// layer_norm: Keras's LayerNormalization over the last axis (layer_norm.hpp), gamma and beta float32 in both
// precisions (their kernel reads and writes float32 variables).
#include "../layer.hpp"
#include "layer_norm.hpp"

namespace cuda_plugin {
namespace {

class LayerNorm : public OneInputLayer {
 public:
  LayerNorm(const NodeSpec& node, Build& b)
      : OneInputLayer(b), params_(b.params) {
    const Shape& in = b.only_input(node, 0, "a tensor whose last axis is normalised");
    b.check_output(node, in);
    features_ = in.back();
    rows_ = b.batch * ramjet::ir::product(in) / features_;
    epsilon_ = static_cast<float>(node.attr_number("epsilon", 1e-3));
    if (!node.params.count("gamma") || !node.params.count("beta"))
      node.fail(RAMJET_ERR_UNSUPPORTED, "the cuda backend runs layer_norm with both gamma and beta (scale and center)");
    gamma_ = &b.params.get(node.param("gamma"));
    beta_ = &b.params.get(node.param("beta"));
    if (gamma_->shape != Shape{features_} || beta_->shape != Shape{features_})
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "gamma and beta must be [" + std::to_string(features_) + "]");
    mean_ = Buffer(device_, static_cast<size_t>(rows_) * sizeof(float), "layer " + node.name + " means");
    rstd_ = Buffer(device_, static_cast<size_t>(rows_) * sizeof(float), "layer " + node.name + " deviations");
  }
  void forward(const Pass&) override {
    layer_norm_forward(in_.data.get(), gamma_->value.as<float>(), beta_->value.as<float>(), out_.data.get(),
                       mean_.as<float>(), rstd_.as<float>(), rows_, features_, epsilon_, dtype_, device_.stream());
  }
  void backward(const Pass&) override {
    // The kernel writes dx whenever it runs: a spare target when the input needs none.
    void* dx = in_.wants_grad ? gradient_slot(in_, device_, dtype_, "layer_norm input gradient") : unused_dx();
    auto* dgamma = static_cast<float*>(params_.grad_target(*gamma_));
    auto* dbeta = static_cast<float*>(params_.grad_target(*beta_));
    layer_norm_backward(in_.data.get(), out_.grad.get(), gamma_->value.as<float>(), mean_.as<float>(),
                        rstd_.as<float>(), dx, dgamma, dbeta, rows_, features_, dtype_, device_.stream());
    params_.grad_commit(*gamma_);
    params_.grad_commit(*beta_);
    if (in_.wants_grad) gradient_written(in_, device_, dtype_);
  }
  std::vector<Parameter*> parameters() const override { return {gamma_, beta_}; }

 private:
  void* unused_dx() {
    if (unused_.bytes() == 0) unused_ = Buffer(device_, in_.data.bytes(), "layer_norm's unused input gradient");
    return unused_.get();
  }

  Parameters& params_;
  Parameter* gamma_ = nullptr;
  Parameter* beta_ = nullptr;
  int64_t rows_ = 0, features_ = 0;
  float epsilon_ = 1e-3f;
  Buffer mean_, rstd_, unused_;
};

}  // namespace

std::unique_ptr<Layer> make_layer_norm(const NodeSpec& n, Build& b) { return std::make_unique<LayerNorm>(n, b); }

}  // namespace cuda_plugin
