// conv2d: Keras Conv2D on an image [H, W, C] (channels last), kernel HWIO on the host and cuDNN's [out, kh, kw, in]
// on the device (parameters.hpp), bias [filters], on cuDNN (convolution.hpp). cuDNN pads symmetrically: "same"
// padding that needs one more row or column at the end than at the start is refused, naming the layer.
#include "../layer.hpp"
#include "convolution.hpp"
#include "own_activation.hpp"

namespace cuda_plugin {
namespace {

ConvolutionShape shape_of(const NodeSpec& node, Build& b) {
  const ramjet::ir::ConvGeometry g = ramjet::ir::conv_geometry(node, b.only_input(node, 3, "an image [H, W, C]"));
  if (g.G != 1) node.fail(RAMJET_ERR_UNSUPPORTED, "the cuda backend runs conv2d with groups 1 only");
  if (g.dilation[0] != 1 || g.dilation[1] != 1)
    node.fail(RAMJET_ERR_UNSUPPORTED, "the cuda backend runs conv2d with dilation 1 only");
  if (g.padding[0] != g.padding[1] || g.padding[2] != g.padding[3])
    node.fail(RAMJET_ERR_UNSUPPORTED, "cuDNN pads both sides alike; this padding [top, bottom, left, right] is uneven "
                                      "(an even kernel with \"same\" padding, or stride 2 on an even size)");
  b.check_output(node, {g.OH, g.OW, g.F});
  auto i = [](int64_t v) { return static_cast<int>(v); };
  return {i(b.batch), i(g.H), i(g.W), i(g.C), i(g.F), i(g.kernel[0]), i(g.kernel[1]), i(g.strides[0]),
          i(g.strides[1]), i(g.padding[0]), i(g.padding[2])};
}

class Conv2d : public Layer {
 public:
  Conv2d(const NodeSpec& node, Build& b)
      : device_(b.device), params_(b.params), dtype_(b.dtype), in_(*b.inputs.at(0)), out_(b.output),
        shape_(shape_of(node, b)), kernel_(&b.params.get(node.param("kernel"))),
        bias_(node.attr_bool("use_bias", true) ? &b.params.get(node.param("bias")) : nullptr), act_(node, b, false) {
    if (kernel_->shape != Shape{shape_.kernel_h, shape_.kernel_w, shape_.in_channels, shape_.out_channels})
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "the kernel must be [kh, kw, in, filters]");
    if (bias_ != nullptr && bias_->shape != Shape{shape_.out_channels})
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "the bias must be [filters]");
    products_ = std::make_unique<ConvolutionProducts>(device_.dnn(), node.name, shape_,
                                                      dtype_ == CUDA_R_16F ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT,
                                                      device_.settings().cudnn_workspace_limit);
    workspace_ = Buffer(device_, products_->workspace_bytes(), "layer " + node.name + " cuDNN workspace");
  }

  void forward(const Pass& pass) override {
    products_->forward(in_.data.get(), params_.compute(*kernel_), bias_ ? params_.compute(*bias_) : nullptr,
                       act_.product_target(out_), workspace_.get());
    act_.forward(pass, out_);
  }

  void backward(const Pass& pass) override {
    const void* dy = act_.product_gradient(pass, out_);
    void* dw = params_.grad_target(*kernel_);
    void* db = bias_ ? params_.grad_target(*bias_) : nullptr;
    products_->backward_filter(in_.data.get(), dy, dw, db, workspace_.get());
    params_.grad_commit(*kernel_);
    if (bias_) params_.grad_commit(*bias_);
    if (!in_.wants_grad) return;
    products_->backward_data(dy, params_.compute(*kernel_), gradient_slot(in_, device_, dtype_, "conv2d input gradient"),
                             workspace_.get());
    gradient_written(in_, device_, dtype_);
  }

  std::vector<Parameter*> parameters() const override {
    if (bias_) return {kernel_, bias_};
    return {kernel_};
  }

 private:
  Device& device_;
  Parameters& params_;
  cudaDataType_t dtype_;
  Value& in_;
  Value& out_;
  ConvolutionShape shape_;
  Parameter* kernel_;
  Parameter* bias_;
  OwnActivation act_;
  std::unique_ptr<ConvolutionProducts> products_;
  Buffer workspace_;
};

}  // namespace

std::unique_ptr<Layer> make_conv2d(const NodeSpec& node, Build& b) { return std::make_unique<Conv2d>(node, b); }

}  // namespace cuda_plugin
