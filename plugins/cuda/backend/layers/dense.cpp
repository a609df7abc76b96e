// dense: Keras Dense over the last axis (a rank-1 input, or rows of a higher-rank one), kernel [in, units], bias
// [units], on cuBLASLt (dense.hpp), the activation fused as an epilogue where it can be.
#include "../layer.hpp"
#include "dense.hpp"
#include "own_activation.hpp"

namespace cuda_plugin {
namespace {

class Dense : public OneInputLayer {
 public:
  Dense(const NodeSpec& node, Build& b)
      : OneInputLayer(b), params_(b.params),
        kernel_(&b.params.get(node.param("kernel"))),
        bias_(node.attr_bool("use_bias", true) ? &b.params.get(node.param("bias")) : nullptr),
        act_(node, b, bias_ != nullptr) {
    const Shape& in = b.only_input(node, 0, "a tensor whose last axis holds the features");
    const int64_t features = in.back(), units = node.attr_int("units");
    if (units < 1) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "units must be >= 1");
    Shape out = in;
    out.back() = units;
    b.check_output(node, out);
    if (kernel_->shape != Shape{features, units})
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "the kernel must be [" + std::to_string(features) + ", " +
                                                 std::to_string(units) + "]");
    if (bias_ != nullptr && bias_->shape != Shape{units})
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "the bias must be [" + std::to_string(units) + "]");
    const DenseEpilogue epilogue = bias_ == nullptr   ? DenseEpilogue::none
                                   : act_.fused_relu() ? DenseEpilogue::bias_relu
                                                       : DenseEpilogue::bias;
    products_ = std::make_unique<DenseProducts>(device_.blas(), node.name, b.batch * ramjet::ir::product(in) / features,
                                                features, units, dtype_, epilogue, device_.settings().blas_workspace);
  }

  void forward(const Pass& pass) override {
    products_->forward(in_.data.get(), params_.compute(*kernel_), bias_ ? params_.compute(*bias_) : nullptr,
                       act_.product_target(out_), device_.blas_workspace(), device_.stream());
    act_.forward(pass, out_);
  }

  void backward(const Pass& pass) override {
    const void* dy = act_.product_gradient(pass, out_);
    void* dw = params_.grad_target(*kernel_);
    void* db = bias_ ? params_.grad_target(*bias_) : nullptr;
    products_->backward_weights(in_.data.get(), dy, dw, db, device_.blas_workspace(), device_.stream());
    params_.grad_commit(*kernel_);
    if (bias_) params_.grad_commit(*bias_);
    if (!in_.wants_grad) return;
    products_->backward_data(dy, params_.compute(*kernel_), gradient_slot(in_, device_, dtype_, "dense input gradient"),
                             device_.blas_workspace(), device_.stream());
    gradient_written(in_, device_, dtype_);
  }

  std::vector<Parameter*> parameters() const override { return kernel_and_bias(kernel_, bias_); }

 private:
  Parameters& params_;
  Parameter* kernel_;
  Parameter* bias_;
  OwnActivation act_;
  std::unique_ptr<DenseProducts> products_;
};

}  // namespace

std::unique_ptr<Layer> make_dense(const NodeSpec& node, Build& b) { return std::make_unique<Dense>(node, b); }

}  // namespace cuda_plugin
