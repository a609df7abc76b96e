// conv2d: Keras Conv2D on an image [H, W, C] (channels last), and conv1d on a sequence [T, C] as a one-row image;
// kernel HWIO on the host and cuDNN's [out, kh, kw, in] in the compute copy (parameters.hpp), bias [filters], on
// cuDNN (convolution.hpp). cuDNN pads both sides alike; uneven padding ("same" at stride 2 on an even size, an
// even kernel, conv1d's causal padding) is made explicit: the input is copied into a zero-padded buffer the
// convolution reads unpadded, and its gradient is that buffer's interior.
#include "../elementwise.hpp"
#include "../layer.hpp"
#include "convolution.hpp"
#include "own_activation.hpp"

namespace cuda_plugin {
namespace {

// conv1d is the same convolution on its sequence [T, C] seen as a one-row image [1, T, C] (the SDK's geometry).
bool is_conv1d(const NodeSpec& node) { return node.op == "conv1d"; }

ramjet::ir::ConvGeometry geometry_of(const NodeSpec& node, Build& b) {
  const ramjet::ir::ConvGeometry g =
      is_conv1d(node) ? ramjet::ir::conv1d_geometry(node, b.only_input(node, 2, "a sequence [T, C]"))
                     : ramjet::ir::conv_geometry(node, b.only_input(node, 3, "an image [H, W, C]"));
  if (g.G != 1) node.fail(RAMJET_ERR_UNSUPPORTED, "the cuda backend runs " + node.op + " with groups 1 only");
  if (g.dilation[0] != 1 || g.dilation[1] != 1)
    node.fail(RAMJET_ERR_UNSUPPORTED, "the cuda backend runs " + node.op + " with dilation 1 only");
  b.check_output(node, is_conv1d(node) ? Shape{g.OW, g.F} : Shape{g.OH, g.OW, g.F});
  return g;
}

bool uneven(const ramjet::ir::ConvGeometry& g) { return g.padding[0] != g.padding[1] || g.padding[2] != g.padding[3]; }

// What cuDNN sees: the input as it is with the padding, or (uneven padding) the explicitly padded input without.
ConvolutionShape shape_of(const ramjet::ir::ConvGeometry& g, int64_t batch) {
  auto i = [](int64_t v) { return static_cast<int>(v); };
  const auto& p = g.padding;
  if (uneven(g))
    return {i(batch), i(g.H + p[0] + p[1]), i(g.W + p[2] + p[3]), i(g.C), i(g.F), i(g.kernel[0]), i(g.kernel[1]),
            i(g.strides[0]), i(g.strides[1]), 0, 0};
  return {i(batch), i(g.H), i(g.W), i(g.C), i(g.F), i(g.kernel[0]), i(g.kernel[1]), i(g.strides[0]),
          i(g.strides[1]), i(p[0]), i(p[2])};
}

class Conv2d : public OneInputLayer {
 public:
  Conv2d(const NodeSpec& node, Build& b)
      : OneInputLayer(b), params_(b.params),
        geometry_(geometry_of(node, b)), shape_(shape_of(geometry_, b.batch)),
        kernel_(&b.params.get(node.param("kernel"))),
        bias_(node.attr_bool("use_bias", true) ? &b.params.get(node.param("bias")) : nullptr), act_(node, b, false) {
    const Shape kernel = is_conv1d(node) ? Shape{shape_.kernel_w, shape_.in_channels, shape_.out_channels}
                                        : Shape{shape_.kernel_h, shape_.kernel_w, shape_.in_channels, shape_.out_channels};
    if (kernel_->shape != kernel)
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "the kernel must be " + ramjet::ir::shape_string(kernel));
    if (bias_ != nullptr && bias_->shape != Shape{shape_.out_channels})
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "the bias must be [filters]");
    products_ = std::make_unique<ConvolutionProducts>(device_.dnn(), node.name, shape_,
                                                      dtype_ == CUDA_R_16F ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT,
                                                      device_.settings().cudnn_workspace_limit);
    device_.reserve_workspace(products_->workspace_bytes(), "the convolutions' cuDNN workspace (layer " + node.name + ")");
    if (uneven(geometry_)) {
      const auto& p = geometry_.padding;
      pad_ = PadShape{b.batch, geometry_.H, geometry_.W, geometry_.C, p[0], p[1], p[2], p[3]};
      const int64_t padded = b.batch * shape_.height * shape_.width * shape_.in_channels;
      padded_ = b.buffer(padded, "layer " + node.name + " padded input");
      if (b.backward && in_.wants_grad) padded_grad_ = b.buffer(padded, "layer " + node.name + " padded input gradient");
    }
  }

  void forward(const Pass& pass) override {
    if (padded_.bytes()) pad_image(in_.data.get(), padded_.get(), pad_, dtype_, device_.stream());
    products_->forward(input(), params_.compute(*kernel_), bias_ ? params_.compute(*bias_) : nullptr,
                       act_.product_target(out_), device_.workspace());
    act_.forward(pass, out_);
  }

  void backward(const Pass& pass) override {
    const void* dy = act_.product_gradient(pass, out_);
    void* dw = params_.grad_target(*kernel_);
    void* db = bias_ ? params_.grad_target(*bias_) : nullptr;
    products_->backward_filter(input(), dy, dw, db, device_.workspace());
    params_.grad_commit(*kernel_);
    if (bias_) params_.grad_commit(*bias_);
    if (!in_.wants_grad) return;
    void* dx = gradient_slot(in_, device_, dtype_, "conv2d input gradient");
    products_->backward_data(dy, params_.compute(*kernel_), padded_.bytes() ? padded_grad_.get() : dx, device_.workspace());
    if (padded_.bytes()) crop_image(padded_grad_.get(), dx, pad_, dtype_, device_.stream());
    gradient_written(in_, device_, dtype_);
  }

  std::vector<Parameter*> parameters() const override { return kernel_and_bias(kernel_, bias_); }

 private:
  const void* input() const { return padded_.bytes() ? padded_.get() : in_.data.get(); }

  Parameters& params_;
  ramjet::ir::ConvGeometry geometry_;
  ConvolutionShape shape_;
  Parameter* kernel_;
  Parameter* bias_;
  OwnActivation act_;
  std::unique_ptr<ConvolutionProducts> products_;
  PadShape pad_{};
  Buffer padded_, padded_grad_;  // uneven padding only
};

}  // namespace

std::unique_ptr<Layer> make_conv2d(const NodeSpec& node, Build& b) { return std::make_unique<Conv2d>(node, b); }

}  // namespace cuda_plugin
