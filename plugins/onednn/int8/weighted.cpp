// conv2d (ordinary, grouped, depthwise) and dense on u8 activations and s8 weights: the oneDNN primitive
// accumulates in s32 and requantizes with per-channel output scales in_scale * w_scale[c] / out_scale. Zero
// points never reach the primitive's hot loop: the output's goes into the f32 bias (round(s * (acc + b + zp / s))
// = round(s * (acc + b)) + zp), dense's input one into the bias too (minus zp_in * the kernel's column sum), and a
// convolution whose input zero point is not 0 (u8 domain) hands it to oneDNN, which also gets the padding right.
// On a CPU without VNNI, where oneDNN's int8 kernels saturate, both run on exact_conv.hpp's step instead. First
// layers with few input channels (small_conv.hpp) and depthwise layers (depthwise_conv.hpp) have kernels of
// their own on AVX-512 VNNI.
#include "../layout.hpp"
#include "depthwise_conv.hpp"
#include "exact_conv.hpp"
#include "qlayer_util.hpp"
#include "small_conv.hpp"

#include <algorithm>

namespace onednn::int8 {
namespace {

// Everything both layers do once the primitive is built.
class WeightedStep : public QStep {
 public:
  void run(dnnl::stream& stream) override { fwd_.execute(stream, args_); }

  void prepare(const QParamStore& params, dnnl::stream& stream) override {
    const QParam& kernel = params.get(kernel_);
    dnnl::memory plain(plain_kernel_, weights_.get_engine(), const_cast<int8_t*>(kernel.s8.data()));
    dnnl::reorder(plain, weights_).execute(stream, plain, weights_);
    const int32_t* bias = bias_.empty() ? nullptr : params.get(bias_).s32.data();
    const std::vector<float> folded = input_fold(kernel);
    auto* b = static_cast<float*>(bias_mem_.get_data_handle());
    for (size_t c = 0; c < folded.size(); ++c) {
      const float scale = scales_.size() == 1 ? scales_[0] : scales_[c];
      b[c] = static_cast<float>(bias ? bias[c] : 0) + folded[c] + static_cast<float>(zp_out_) / scale;
    }
  }

 protected:
  // The input zero point's share of each output channel that the bias absorbs (dense); zeros by default.
  virtual std::vector<float> input_fold(const QParam&) const { return std::vector<float>(channels_, 0.0f); }

  // Output scales, the fused activation's clamp and the shared scratchpad.
  dnnl::primitive_attr attr(const NodeSpec& node, QBuilder& b, const ActivationQuant& in, const ActivationQuant& out,
                            int scale_axis_mask) {
    scales_ = output_scales(node, b, in, out, channels_);
    zp_out_ = out.zp_u8();
    dnnl::primitive_attr attr = b.attr();
    attr.set_output_scales(scales_.size() == 1 ? 0 : scale_axis_mask, scales_);
    const ClampRange clamp = activation_range(node, out);
    if (clamp.narrows_u8()) {
      dnnl::post_ops ops;
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, static_cast<float>(clamp.lo + 128),
                         static_cast<float>(clamp.hi + 128));
      attr.set_post_ops(ops);
    }
    return attr;
  }

  void finish(const NodeSpec& node, QBuilder& b, const dnnl::primitive& fwd, const md& weights, const md& src_mem_md,
              QValue& in, const md& dst, const Shape& out_shape, const ActivationQuant& out) {
    fwd_ = fwd;
    kernel_ = node.param("kernel");
    if (node.params.count("bias")) bias_ = node.param("bias");
    weights_ = dnnl::memory(weights, b.engine());
    bias_mem_ = dnnl::memory(md({channels_}, dt::f32, tag::a), b.engine());
    const dnnl::memory src = b.in_layout(in, src_mem_md);
    QValue& v = b.define(node.name, out_shape, out, dst);
    args_ = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights_}, {DNNL_ARG_BIAS, bias_mem_}, {DNNL_ARG_DST, v.mem}};
  }

  int64_t channels_ = 0;
  md plain_kernel_;  // the IR's kernel layout, described in oneDNN's dims
  std::vector<float> scales_;
  int32_t zp_out_ = 0;
  std::string kernel_, bias_;
  dnnl::primitive fwd_;
  dnnl::memory weights_, bias_mem_;
  Args args_;
};

class QConv2D : public WeightedStep {
 public:
  QConv2D(const NodeSpec& node, QBuilder& b) {
    QValue& in = only_input(node, b);
    const ConvGeometry g = conv_geometry(node, in.shape);
    const int64_t H = g.H, W = g.W, C = g.C, F = g.F, G = g.G, OH = g.OH, OW = g.OW;
    const auto &k = g.kernel, &s = g.strides, &pad = g.padding, &d = g.dilation;
    check_output_shape(node, {OH, OW, F});
    checked_param(node, b, "kernel", true, {k[0], k[1], C / G, F}, true);
    checked_param(node, b, "bias", false, {F}, false);
    channels_ = F;

    plain_kernel_ = hwio_kernel_md(k[0], k[1], C, F, G, dt::s8);
    const dnnl::memory::dims wdims = plain_kernel_.dims();

    const ActivationQuant& out = output_quant(node, b);
    dnnl::primitive_attr attr = this->attr(node, b, in.quant, out, 1 << 1);
    if (in.quant.zp_u8() != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {in.quant.zp_u8()});
    const int64_t N = b.batch();
    const dnnl::convolution_forward::primitive_desc pd(
        {dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, md({N, C, H, W}, dt::u8, tag::any),
         md(wdims, dt::s8, tag::any), md({F}, dt::f32, tag::a), md({N, F, OH, OW}, dt::u8, tag::any), {s[0], s[1]},
         {d[0] - 1, d[1] - 1}, {pad[0], pad[2]}, {pad[1], pad[3]}},
        attr, b.engine());
    finish(node, b, dnnl::convolution_forward(pd), pd.weights_desc(), pd.src_desc(), in, pd.dst_desc(), node.shape, out);
    b.use_scratchpad(pd, args_);
  }
};

class QDense : public WeightedStep {
 public:
  QDense(const NodeSpec& node, QBuilder& b) {
    QValue& in = only_input(node, b);
    if (in.shape.size() != 1)
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "dense needs a flat input, got " + shape_string(in.shape) +
                                                 " (add a flatten layer first)");
    const int64_t K = in.shape[0];
    const int64_t units = node.attr_int("units", node.shape.empty() ? 0 : node.shape[0]);
    if (units < 1 || node.shape != Shape{units})
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "the output shape must be [units]");
    checked_param(node, b, "kernel", true, {K, units}, true);
    checked_param(node, b, "bias", false, {units}, false);
    channels_ = units;
    zp_in_ = in.quant.zp_u8();
    plain_kernel_ = md({units, K}, dt::s8, tag::ba);  // [in, out] row-major is oneDNN's {O, I} read column-wise

    const ActivationQuant& out = output_quant(node, b);
    const dnnl::primitive_attr attr = this->attr(node, b, in.quant, out, 1 << 1);
    const int64_t N = b.batch();
    const dnnl::inner_product_forward::primitive_desc pd(
        {dnnl::prop_kind::forward_inference, md({N, K}, dt::u8, tag::any), md({units, K}, dt::s8, tag::any),
         md({units}, dt::f32, tag::a), md({N, units}, dt::u8, tag::any)},
        attr, b.engine());
    finish(node, b, dnnl::inner_product_forward(pd), pd.weights_desc(), pd.src_desc(), in, pd.dst_desc(), node.shape,
           out);
    b.use_scratchpad(pd, args_);
  }

 private:
  // sum_i (q_i - zp) w_io = sum_i q_i w_io - zp * sum_i w_io: the second term is a constant per output.
  std::vector<float> input_fold(const QParam& kernel) const override {
    std::vector<float> fold(channels_, 0.0f);
    if (zp_in_ == 0) return fold;
    std::vector<int64_t> sums(channels_, 0);
    const int64_t K = static_cast<int64_t>(kernel.s8.size()) / channels_;
    for (int64_t i = 0; i < K; ++i)
      for (int64_t o = 0; o < channels_; ++o) sums[o] += kernel.s8[i * channels_ + o];
    for (int64_t o = 0; o < channels_; ++o) fold[o] = -static_cast<float>(zp_in_ * sums[o]);
    return fold;
  }

  int32_t zp_in_ = 0;
};

// conv2d or dense on exact_conv.hpp's kernel, for a CPU where oneDNN's int8 kernels saturate (no VNNI). Reads and
// writes its values in the host's layouts (nhwc, row-major).
class ExactWeightedStep : public QStep {
 public:
  static std::unique_ptr<QStep> conv(const NodeSpec& node, QBuilder& b) {
    QValue& in = only_input(node, b);
    const ConvGeometry g = conv_geometry(node, in.shape);
    check_output_shape(node, {g.OH, g.OW, g.F});
    checked_param(node, b, "kernel", true, {g.kernel[0], g.kernel[1], g.C / g.G, g.F}, true);
    checked_param(node, b, "bias", false, {g.F}, false);
    ExactConvShape s;
    s.H = g.H, s.W = g.W, s.C = g.C, s.F = g.F, s.G = g.G, s.OH = g.OH, s.OW = g.OW;
    s.kh = g.kernel[0], s.kw = g.kernel[1], s.sh = g.strides[0], s.sw = g.strides[1];
    s.dh = g.dilation[0], s.dw = g.dilation[1];
    s.pt = g.padding[0], s.pb = g.padding[1], s.pl = g.padding[2], s.pr = g.padding[3];
    return std::unique_ptr<QStep>(new ExactWeightedStep(node, b, in, s));
  }

  static std::unique_ptr<QStep> dense(const NodeSpec& node, QBuilder& b) {
    QValue& in = only_input(node, b);
    if (in.shape.size() != 1)
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "dense needs a flat input, got " + shape_string(in.shape) +
                                                 " (add a flatten layer first)");
    const int64_t K = in.shape[0];
    const int64_t units = node.attr_int("units", node.shape.empty() ? 0 : node.shape[0]);
    if (units < 1 || node.shape != Shape{units})
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "the output shape must be [units]");
    checked_param(node, b, "kernel", true, {K, units}, true);
    checked_param(node, b, "bias", false, {units}, false);
    ExactConvShape s;  // a 1x1 convolution of a 1x1 image with K channels
    s.C = K, s.F = units;
    return std::unique_ptr<QStep>(new ExactWeightedStep(node, b, in, s));
  }

  void prepare(const QParamStore& params, dnnl::stream&) override {
    const int32_t* bias = r_.bias.empty() ? nullptr : params.get(r_.bias).s32.data();
    pack_exact_weights(shape_, params.get(r_.kernel).s8.data(), bias, r_.scales, r_.zp_in, r_.zp_out, weights_);
  }

  void run(dnnl::stream&) override {
    exact_conv_forward(shape_, batch_, static_cast<const uint8_t*>(src_.get_data_handle()),
                       static_cast<uint8_t>(r_.zp_in), weights_, static_cast<uint8_t*>(dst_.get_data_handle()), scratch_);
  }

 private:
  ExactWeightedStep(const NodeSpec& node, QBuilder& b, QValue& in, const ExactConvShape& s)
      : shape_(s), batch_(b.batch()) {
    r_ = own_kernel_requant(node, b, in.quant, s.F);
    weights_.lo = r_.lo;
    weights_.hi = r_.hi;
    src_ = b.canonical(in);
    dst_ = b.define(node.name, node.shape, output_quant(node, b), canonical_md(b.batch(), node.shape, dt::u8)).mem;
  }

  ExactConvShape shape_;
  int64_t batch_;
  OwnKernelRequant r_;
  ExactConvWeights weights_;
  dnnl::memory src_, dst_;
  std::vector<uint8_t> scratch_;
};

bool onednn_exact() {
  static const bool exact = onednn_int8_is_exact();
  return exact;
}

}  // namespace

void build_conv2d(const NodeSpec& node, QBuilder& b) {
  if (std::unique_ptr<QStep> small = SmallConvStep::try_build(node, b)) return b.add(std::move(small));
  if (std::unique_ptr<QStep> depthwise = DepthwiseStep::try_build(node, b)) return b.add(std::move(depthwise));
  if (!onednn_exact()) return b.add(ExactWeightedStep::conv(node, b));
  b.add(std::make_unique<QConv2D>(node, b));
}
void build_dense(const NodeSpec& node, QBuilder& b) {
  if (!onednn_exact()) return b.add(ExactWeightedStep::dense(node, b));
  b.add(std::make_unique<QDense>(node, b));
}

}  // namespace onednn::int8
