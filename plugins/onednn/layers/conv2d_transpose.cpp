// conv2d_transpose: Keras Conv2DTranspose on oneDNN's deconvolution (forward, backward data, backward weights and
// bias). Kernel [kh, kw, F, C] as Keras keeps it (F the output channels), bias [F], padding [top, bottom, left,
// right] of the convolution it transposes: the output is (in - 1) * stride + kernel - top - bottom, and bottom /
// right may be negative (down to 1 - stride) where Keras's output has rows no input reaches; oneDNN accepts that.
// The activation is fused as a post-op where the backward allows, as conv2d's.
#include "../layout.hpp"
#include "layer_skeletons.hpp"

#include <algorithm>

namespace onednn {
namespace {

// The Keras kernel [kh, kw, F, C] in oneDNN's deconvolution weight dims {F, C, kh, kw}, by strides alone.
md hwoi_kernel_md(int64_t kh, int64_t kw, int64_t C, int64_t F) {
  return md({F, C, kh, kw}, dt::f32, dnnl::memory::dims{C, 1, kw * F * C, F * C});
}

class Conv2DTranspose : public WeightedLayer {
 public:
  Conv2DTranspose(const NodeSpec& node, LayerBuilder& b) {
    if (b.input_count() != 1) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "conv2d_transpose takes one input");
    b.require_rank(3, "an image [H, W, C]");
    const Shape& in = b.input(0).shape;
    const int64_t H = in[0], W = in[1], C = in[2], F = node.attr_int("filters");
    const auto k = node.attr_ints("kernel", 2);
    const auto s = node.attr_ints("strides", 2, {1, 1});
    const auto pad = node.attr_ints("padding", 4, {0, 0, 0, 0});
    if (F < 1 || k[0] < 1 || k[1] < 1 || s[0] < 1 || s[1] < 1)
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "filters, kernel and strides must be >= 1");
    if (pad[0] < 0 || pad[2] < 0 || pad[1] <= -s[0] || pad[3] <= -s[1])
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "padding: top and left must be >= 0, bottom and right above -stride");
    const int64_t OH = (H - 1) * s[0] + k[0] - pad[0] - pad[1], OW = (W - 1) * s[1] + k[1] - pad[2] - pad[3];
    if (OH < 1 || OW < 1) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "padding leaves no output");
    const bool use_bias = node.attr_bool("use_bias", true);
    act_ = PostActivation(activation_spec(node.attr_string("activation", "linear"), node));
    b.check_shape({OH, OW, F});
    Param& kernel = b.param("kernel", {k[0], k[1], F, C});
    Param* bias = use_bias ? &b.param("bias", {F}) : nullptr;
    out_ = &b.output();

    const int64_t N = b.batch();
    const dt type = b.compute_type();
    const md keras_kernel = hwoi_kernel_md(k[0], k[1], C, F);
    const md bias_md = bias ? row_major_md({F}) : md();
    const md src_any({N, C, H, W}, type, tag::any), dst_any({N, F, OH, OW}, type, tag::any);
    const md wei_any(keras_kernel.dims(), type, tag::any);
    const md diff_wei_any(keras_kernel.dims(), dt::f32, tag::any);  // the weight gradient stays float32
    const dnnl::memory::dims strides{s[0], s[1]}, pad_l{pad[0], pad[2]}, pad_r{pad[1], pad[3]};
    const auto algorithm = dnnl::algorithm::deconvolution_direct;

    dnnl::primitive_attr attr = b.attr();
    act_.add_to(attr);
    const dnnl::deconvolution_forward::primitive_desc pd(
        {b.forward_kind(), algorithm, src_any, wei_any, bias_md, dst_any, strides, pad_l, pad_r}, attr, b.engine());
    fwd_ = dnnl::deconvolution_forward(pd);
    in_ = Edge(b, b.input(0), pd.src_desc());
    const dnnl::memory dst = act_.finish(b, pd.dst_desc());
    kernel_ = WeightsView(b, kernel, keras_kernel);
    fwd_args_ = {{DNNL_ARG_SRC, in_.mem()}, {DNNL_ARG_WEIGHTS, kernel_.compute(pd.weights_desc())}, {DNNL_ARG_DST, dst}};
    if (bias) fwd_args_[DNNL_ARG_BIAS] = bias->value;
    b.use_scratchpad(pd, fwd_args_);
    if (!b.backward()) return;

    const dnnl::deconvolution_backward_weights::primitive_desc wpd(
        {algorithm, pd.src_desc(), diff_wei_any, bias_md, pd.dst_desc(), strides, pad_l, pad_r}, b.attr(), b.engine(),
        pd);
    bwd_weights_ = dnnl::deconvolution_backward_weights(wpd);
    kernel_grad_ = GradSink(b, kernel, keras_kernel, wpd.diff_weights_desc());
    if (bias) bias_grad_ = GradSink(b, *bias, bias_md, wpd.diff_bias_desc());
    bwd_weights_args_ = {{DNNL_ARG_SRC, in_.mem()}};
    b.use_scratchpad(wpd, bwd_weights_args_);

    if (!in_.needs_grad()) return;
    const dnnl::deconvolution_backward_data::primitive_desc dpd(
        {algorithm, pd.src_desc(), wei_any, pd.dst_desc(), strides, pad_l, pad_r}, b.attr(), b.engine(), pd);
    bwd_data_ = dnnl::deconvolution_backward_data(dpd);
    bwd_data_args_ = {{DNNL_ARG_WEIGHTS, kernel_.compute(dpd.weights_desc())}};
    b.use_scratchpad(dpd, bwd_data_args_);
  }
};

}  // namespace

std::unique_ptr<Layer> make_conv2d_transpose(const NodeSpec& node, LayerBuilder& builder) {
  // Taps that never overlap (kernel = stride, no padding): one inner product (conv2d_transpose_taps.cpp).
  if (builder.input_count() == 1 && builder.input(0).shape.size() == 3) {
    const auto k = node.attr_ints("kernel", 2), s = node.attr_ints("strides", 2, {1, 1});
    const auto pad = node.attr_ints("padding", 4, {0, 0, 0, 0});
    if (k == s && std::all_of(pad.begin(), pad.end(), [](int64_t p) { return p == 0; }) && node.attr_int("filters") >= 1)
      return make_conv2d_transpose_taps(node, builder, k[0], k[1]);
  }
  return std::make_unique<Conv2DTranspose>(node, builder);
}

}  // namespace onednn
