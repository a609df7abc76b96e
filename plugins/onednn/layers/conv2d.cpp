// conv2d: Keras Conv2D (and DepthwiseConv2D as groups == input channels). Kernel HWIO [kh, kw, in/groups, filters],
// bias [filters], padding [top, bottom, left, right], the activation fused as a post-op where the backward allows.
// conv1d: Keras Conv1D on a sequence [T, C], kernel [k, in/groups, filters], padding [before, after]: the same
// convolution on the sequence seen as a one-row image [1, T, C] (plain nhwc: the same bytes, nothing copied).
#include "../edge.hpp"
#include "../layout.hpp"
#include "../weights.hpp"
#include "activation.hpp"
#include "conv2d_choice.hpp"
#include "conv2d_gemm_weights.hpp"
#include "layer_skeletons.hpp"
#include "registry.hpp"

#include <algorithm>
#include <string_view>

namespace onednn {
namespace {

class Conv2D : public WeightedLayer {
 public:
  Conv2D(const NodeSpec& node, LayerBuilder& b) {
    if (b.input_count() != 1) node.fail(RAMJET_ERR_INVALID_ARGUMENT, node.op + " takes one input");
    const bool sequence = node.op == "conv1d";
    if (sequence) b.require_rank(2, "a sequence [T, C]");
    else b.require_rank(3, "an image [H, W, C]");
    const ConvGeometry g = sequence ? conv1d_geometry(node, b.input(0).shape) : conv_geometry(node, b.input(0).shape);
    const int64_t H = g.H, W = g.W, C = g.C, F = g.F, G = g.G, OH = g.OH, OW = g.OW;
    const auto &k = g.kernel, &s = g.strides, &pad = g.padding, &d = g.dilation;
    const bool use_bias = node.attr_bool("use_bias", true);
    act_ = PostActivation(activation_spec(node.attr_string("activation", "linear"), node));
    b.check_shape(sequence ? Shape{OW, F} : Shape{OH, OW, F});
    Param& kernel = b.param("kernel", sequence ? Shape{k[1], C / G, F} : Shape{k[0], k[1], C / G, F});
    Param* bias = use_bias ? &b.param("bias", {F}) : nullptr;
    out_ = &b.output();

    const int64_t N = b.batch();
    const dt type = b.compute_type();
    const md keras_kernel = hwio_kernel_md(k[0], k[1], C, F, G, dt::f32);
    const dnnl::memory::dims wdims = keras_kernel.dims();
    const md bias_md = bias ? row_major_md({F}) : md();
    // A one-channel output (an image-to-image model's last layer) stays plain, nhwc in and out, where oneDNN has a
    // kernel for that: a blocked layout would pad its one channel to 16, and every later pass over it (the residual
    // add, the loss's float32 copy) would move 16 times the bytes. So does a bf16 stem before AMX convolutions
    // (conv2d_choice.hpp).
    tag image_tag = sequence || F == 1 || channels_last_stem(g, type) ? tag::nhwc : tag::any;
    md src_any({N, C, H, W}, type, image_tag), dst_any({N, F, OH, OW}, type, image_tag);
    const md wei_any(wdims, type, tag::any);
    const md diff_wei_any(wdims, dt::f32, tag::any);  // bf16 or not, the weight gradient comes out float32
    const dnnl::memory::dims strides{s[0], s[1]}, dilates{d[0] - 1, d[1] - 1}, pad_l{pad[0], pad[2]},
        pad_r{pad[1], pad[3]};

    dnnl::primitive_attr attr = b.attr();
    act_.add_to(attr);
    auto forward_pd = [&](dnnl::algorithm algorithm) {
      return dnnl::convolution_forward::primitive_desc(
          {b.forward_kind(), algorithm, src_any, wei_any, bias_md, dst_any, strides, dilates, pad_l, pad_r}, attr,
          b.engine());
    };
    // oneDNN refuses Winograd where it has no kernel for it (this CPU, a post-op): then direct it is.
    auto algorithm = winograd_pays(g, type, sequence, b.backward()) ? dnnl::algorithm::convolution_winograd
                                                      : dnnl::algorithm::convolution_direct;
    dnnl::convolution_forward::primitive_desc pd;
    try {
      pd = forward_pd(algorithm);
    } catch (const dnnl::error&) {
      if (algorithm == dnnl::algorithm::convolution_direct) throw;
      algorithm = dnnl::algorithm::convolution_direct;
      pd = forward_pd(algorithm);
    }
    if (!sequence && image_tag == tag::nhwc && is_reference(pd)) {
      image_tag = tag::any;
      src_any = md({N, C, H, W}, type, image_tag);
      dst_any = md({N, F, OH, OW}, type, image_tag);
      pd = forward_pd(algorithm);
    }
    fwd_ = dnnl::convolution_forward(pd);
    in_ = Edge(b, b.input(0), pd.src_desc());
    const dnnl::memory dst = sequence ? act_.finish(b, pd.dst_desc(), canonical_md(N, {OW, F}, type))
                                      : act_.finish(b, pd.dst_desc());
    if (sequence && out_->diff) out_diff_view_ = Alias(pd.dst_desc(), b.engine(), out_->diff);
    kernel_ = WeightsView(b, kernel, keras_kernel);
    fwd_args_ = {{DNNL_ARG_SRC, in_.mem()}, {DNNL_ARG_WEIGHTS, kernel_.compute(pd.weights_desc())}, {DNNL_ARG_DST, dst}};
    if (bias) fwd_args_[DNNL_ARG_BIAS] = bias->value;
    b.use_scratchpad(pd, fwd_args_);
    if (!b.backward()) return;

    // A backward without a Winograd kernel (say, with a bias) runs direct: the forward's layouts suit both.
    auto or_direct = [&](auto make) {
      try {
        return make(algorithm);
      } catch (const dnnl::error&) {
        if (algorithm == dnnl::algorithm::convolution_direct) throw;
        return make(dnnl::algorithm::convolution_direct);
      }
    };
    auto weights_pd = [&](const md& src) {
      return or_direct([&](dnnl::algorithm a) {
        return dnnl::convolution_backward_weights::primitive_desc(
            {a, src, diff_wei_any, bias_md, pd.dst_desc(), strides, dilates, pad_l, pad_r}, b.attr(), b.engine(), pd);
      });
    };
    // oneDNN 2.6 on AVX2 has no JIT backward-weights kernel for a one-channel input in the layout the forward
    // picked, and falls back to its reference kernel, 40 times slower than the rest of an MNIST model's step.
    // Letting it choose the input's layout and reordering the input once per step (one image channel) keeps
    // every kernel JIT.
    dnnl::convolution_backward_weights::primitive_desc wpd = weights_pd(pd.src_desc());
    dnnl::memory weights_src = in_.mem();
    if (is_reference(wpd)) {
      const auto chosen = weights_pd(src_any);
      if (!is_reference(chosen) && chosen.src_desc() != pd.src_desc()) {
        wpd = chosen;
        weights_src = b.transient_grad(wpd.src_desc());  // filled and read within one backward
        bwd_weights_src_ = Relayout(in_.mem(), weights_src);
      }
    }
    const bool f32_pays = type == dt::bf16 && !sequence && f32_weight_gradient_pays(g, wpd);
    if (f32_pays && !bias) gemm_weights_ = GemmWeightGradient::make(g, pd.src_desc(), pd.dst_desc(), b);
    if (gemm_weights_) {  // in place of the float32 kernel and its copies: no primitive of its own
      kernel_grad_ = GradSink(b, kernel, keras_kernel, gemm_weights_->diff_weights_desc());
    } else if (f32_pays) {
      const md src32({N, C, H, W}, dt::f32, tag::any), dst32({N, F, OH, OW}, dt::f32, tag::any);
      const auto f32_algorithm = winograd_pays(g, dt::f32, false, true) ? dnnl::algorithm::convolution_winograd
                                                                         : dnnl::algorithm::convolution_direct;
      dnnl::convolution_backward_weights::primitive_desc f32_pd;
      try {
        f32_pd = f32_weights_pd(g, f32_algorithm, src32, dst32, bias_md, b.attr(), b.engine());
      } catch (const dnnl::error&) {
        f32_pd = f32_weights_pd(g, dnnl::algorithm::convolution_direct, src32, dst32, bias_md, b.attr(), b.engine());
      }
      if (!is_reference(f32_pd)) {
        wpd = f32_pd;
        weights_src = b.transient_grad(wpd.src_desc());  // filled and read within one backward
        bwd_weights_src_ = Relayout(in_.mem(), weights_src);
        bwd_weights_diff_ = b.transient_grad(wpd.diff_dst_desc());
        bwd_weights_diff_reorder_ = dnnl::reorder(dnnl::reorder::primitive_desc(
            b.engine(), pd.dst_desc(), b.engine(), wpd.diff_dst_desc()));
      }
    }
    if (!gemm_weights_) {
      bwd_weights_ = dnnl::convolution_backward_weights(wpd);
      kernel_grad_ = GradSink(b, kernel, keras_kernel, wpd.diff_weights_desc());
      if (bias) bias_grad_ = GradSink(b, *bias, bias_md, wpd.diff_bias_desc());
      bwd_weights_args_ = {{DNNL_ARG_SRC, weights_src}};
      b.use_scratchpad(wpd, bwd_weights_args_);
    }

    if (!in_.needs_grad()) return;  // e.g. the first layer: no one wants d loss / d image
    const auto dpd = or_direct([&](dnnl::algorithm a) {
      return dnnl::convolution_backward_data::primitive_desc(
          {a, pd.src_desc(), wei_any, pd.dst_desc(), strides, dilates, pad_l, pad_r}, b.attr(), b.engine(), pd);
    });
    bwd_data_ = dnnl::convolution_backward_data(dpd);
    bwd_data_args_ = {{DNNL_ARG_WEIGHTS, kernel_.compute(dpd.weights_desc())}};
    b.use_scratchpad(dpd, bwd_data_args_);
  }

 private:
  std::unique_ptr<GemmWeightGradient> gemm_weights_;

  bool own_weight_gradients(const Exec& exec, const dnnl::memory& diff) override {
    if (!gemm_weights_) return false;
    gemm_weights_->run(in_.mem(), diff, kernel_grad_.target(exec));
    kernel_grad_.commit(exec);
    return true;
  }
};

}  // namespace

std::unique_ptr<Layer> make_conv2d(const NodeSpec& node, LayerBuilder& builder) {
  if (auto chunked = make_chunked_conv2d(node, builder)) return chunked;
  return std::make_unique<Conv2D>(node, builder);
}

}  // namespace onednn
