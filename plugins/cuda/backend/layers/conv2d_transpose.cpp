// conv2d_transpose: Keras Conv2DTranspose on an image [H, W, C], kernel [kh, kw, filters, C] and bias [filters], as
// the adjoint of a convolution on cuDNN (convolution.hpp): that convolution reads an [OH, OW, filters] image and
// makes [H, W, C], so this layer's forward is its backward-data, this layer's input gradient its forward, and the
// kernel's gradient its backward-filter with the roles of input and output exchanged. The kernel is that
// convolution's HWIO, so it travels in cuDNN's filter layout as a conv2d kernel does (parameters.hpp). cuDNN pads
// both sides alike: uneven padding is refused, naming the node (the cpu backend runs it).
#include "../elementwise.hpp"
#include "../layer.hpp"
#include "convolution.hpp"
#include "dense.hpp"
#include "own_activation.hpp"

namespace cuda_plugin {
namespace {

// The convolution this layer transposes, from the node's attributes.
ConvolutionShape transposed_shape(const NodeSpec& node, Build& b) {
  const Shape& in = b.only_input(node, 3, "an image [H, W, C]");
  const int64_t F = node.attr_int("filters");
  const auto k = node.attr_ints("kernel", 2);
  const auto s = node.attr_ints("strides", 2, {1, 1});
  const auto pad = node.attr_ints("padding", 4, {0, 0, 0, 0});
  if (F < 1 || k[0] < 1 || k[1] < 1 || s[0] < 1 || s[1] < 1)
    node.fail(RAMJET_ERR_INVALID_ARGUMENT, "filters, kernel and strides must be >= 1");
  if (pad[0] != pad[1] || pad[2] != pad[3] || pad[0] < 0 || pad[2] < 0)
    node.fail(RAMJET_ERR_UNSUPPORTED, "cuDNN pads both sides alike; this padding [top, bottom, left, right] is uneven");
  const int64_t OH = (in[0] - 1) * s[0] + k[0] - pad[0] - pad[1], OW = (in[1] - 1) * s[1] + k[1] - pad[2] - pad[3];
  if (OH < 1 || OW < 1) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "padding leaves no output");
  b.check_output(node, {OH, OW, F});
  auto i = [](int64_t v) { return static_cast<int>(v); };
  return {i(b.batch), i(OH), i(OW), i(F), i(in[2]), i(k[0]), i(k[1]), i(s[0]), i(s[1]), i(pad[0]), i(pad[2])};
}

class Conv2dTranspose : public OneInputLayer {
 public:
  Conv2dTranspose(const NodeSpec& node, Build& b)
      : OneInputLayer(b), params_(b.params), shape_(transposed_shape(node, b)),
        kernel_(&b.params.get(node.param("kernel"))),
        bias_(node.attr_bool("use_bias", true) ? &b.params.get(node.param("bias")) : nullptr), act_(node, b, false) {
    const int64_t F = shape_.in_channels, C = shape_.out_channels;
    if (kernel_->shape != Shape{shape_.kernel_h, shape_.kernel_w, F, C})
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "the kernel must be [kh, kw, filters, in]");
    if (bias_ != nullptr && bias_->shape != Shape{F}) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "the bias must be [filters]");
    products_ = std::make_unique<ConvolutionProducts>(device_.dnn(), node.name, shape_,
                                                      dtype_ == CUDA_R_16F ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT,
                                                      device_.settings().cudnn_workspace_limit);
    if (products_->out_height() != in_.shape[0] || products_->out_width() != in_.shape[1])
      node.fail(RAMJET_ERR_INTERNAL, "the transposed convolution's shapes do not meet");
    device_.reserve_workspace(products_->workspace_bytes(), "the convolutions' cuDNN workspace (layer " + node.name + ")");
  }

  void forward(const Pass& pass) override {
    void* y = act_.product_target(out_);
    products_->backward_data(in_.data.get(), params_.compute(*kernel_), y, device_.workspace());
    if (bias_) add_channel_bias(y, params_.compute(*bias_), out_.elements, shape_.in_channels, dtype_, device_.stream());
    act_.forward(pass, out_);
  }

  void backward(const Pass& pass) override {
    const void* dy = act_.product_gradient(pass, out_);
    if (bias_) {
      column_sums(dy, params_.grad_target(*bias_), out_.elements / shape_.in_channels, shape_.in_channels, dtype_,
                  device_.stream());
      params_.grad_commit(*bias_);
    }
    products_->backward_filter(dy, in_.data.get(), params_.grad_target(*kernel_), nullptr, device_.workspace());
    params_.grad_commit(*kernel_);
    if (!in_.wants_grad) return;
    products_->forward(dy, params_.compute(*kernel_), nullptr,
                       gradient_slot(in_, device_, dtype_, "conv2d_transpose input gradient"), device_.workspace());
    gradient_written(in_, device_, dtype_);
  }

  std::vector<Parameter*> parameters() const override { return kernel_and_bias(kernel_, bias_); }

 private:
  Parameters& params_;
  ConvolutionShape shape_;  // the convolution transposed: [OH, OW, filters] in, [H, W, C] out
  Parameter* kernel_;
  Parameter* bias_;
  OwnActivation act_;
  std::unique_ptr<ConvolutionProducts> products_;
};

}  // namespace

std::unique_ptr<Layer> make_conv2d_transpose(const NodeSpec& node, Build& b) {
  return std::make_unique<Conv2dTranspose>(node, b);
}

}  // namespace cuda_plugin
