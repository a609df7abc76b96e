// batch_norm over the last axis (channels) of a vector [C] or an image [H, W, C], as Keras's BatchNormalization
// (batch_norm.hpp): gamma and beta learn; moving_mean and moving_variance are parameters that do not, moved in
// every training forward.
#include "../batch_norm.hpp"
#include "../layer.hpp"

namespace cuda_plugin {
namespace {

class BatchNorm : public OneInputLayer {
 public:
  BatchNorm(const NodeSpec& node, Build& b)
      : OneInputLayer(b), params_(b.params) {
    const Shape& shape = b.only_input(node, 0, "a vector [C] or an image [H, W, C]");
    if (shape.size() != 1 && shape.size() != 3)
      node.fail(RAMJET_ERR_UNSUPPORTED, "batch_norm of a rank-" + std::to_string(shape.size()) +
                                            " value: only vectors [C] and images [H, W, C] are supported");
    b.check_output(node, shape);
    const int64_t channels = shape.back();
    shape_ = {b.batch * ramjet::ir::product(shape) / channels, channels,
              static_cast<float>(node.attr_number("epsilon", 1e-3))};
    momentum_ = static_cast<float>(node.attr_number("momentum", 0.99));
    if (!(shape_.epsilon > 0) || !(momentum_ >= 0 && momentum_ <= 1))
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "epsilon must be > 0 and momentum in [0, 1]");
    for (auto [role, p] : {std::pair{"gamma", &gamma_}, std::pair{"beta", &beta_},
                           std::pair{"moving_mean", &moving_mean_}, std::pair{"moving_variance", &moving_variance_}}) {
      *p = &b.params.get(node.param(role));
      if ((*p)->shape != Shape{channels})
        node.fail(RAMJET_ERR_INVALID_ARGUMENT, std::string(role) + " must be [" + std::to_string(channels) + "]");
    }
    mean_ = Buffer(device_, static_cast<size_t>(channels) * sizeof(float), "layer " + node.name + " batch means");
    rstd_ = Buffer(device_, static_cast<size_t>(channels) * sizeof(float), "layer " + node.name + " batch deviations");
  }

  void forward(const Pass& pass) override {
    if (pass.training)
      batch_norm_train(in_.data.get(), f(gamma_), f(beta_), out_.data.get(), mean_.as<float>(), rstd_.as<float>(),
                       f(moving_mean_), f(moving_variance_), momentum_, shape_, dtype_, device_.stream());
    else
      batch_norm_infer(in_.data.get(), f(gamma_), f(beta_), f(moving_mean_), f(moving_variance_), out_.data.get(),
                       shape_, dtype_, device_.stream());
  }

  void backward(const Pass&) override {
    void* dx = in_.wants_grad ? gradient_slot(in_, device_, dtype_, "batch_norm input gradient") : nullptr;
    batch_norm_backward(in_.data.get(), out_.grad.get(), f(gamma_), mean_.as<float>(), rstd_.as<float>(), dx,
                        static_cast<float*>(params_.grad_target(*gamma_)),
                        static_cast<float*>(params_.grad_target(*beta_)), shape_, dtype_, device_.stream());
    params_.grad_commit(*gamma_);
    params_.grad_commit(*beta_);
    if (in_.wants_grad) gradient_written(in_, device_, dtype_);
  }

  std::vector<Parameter*> parameters() const override { return {gamma_, beta_}; }

 private:
  static float* f(Parameter* p) { return p->value.as<float>(); }

  Parameters& params_;
  BatchNormShape shape_{};
  float momentum_ = 0.99f;
  Parameter* gamma_ = nullptr;
  Parameter* beta_ = nullptr;
  Parameter* moving_mean_ = nullptr;
  Parameter* moving_variance_ = nullptr;
  Buffer mean_, rstd_;
};

}  // namespace

std::unique_ptr<Layer> make_batch_norm(const NodeSpec& n, Build& b) { return std::make_unique<BatchNorm>(n, b); }

}  // namespace cuda_plugin
