// conv2d_transpose whose kernel equals its stride and that pads nothing (a U-Net's 2×2 stride-2 upsampling): the
// kernel's taps never overlap, so every input pixel is one row of a dense layer, [C] → [kh·kw·F], whose outputs are
// laid out as a kh × kw patch of the output. One inner product (forward, backward data, backward weights) and a
// strided reorder between its rows and the image replace oneDNN's deconvolution, whose backward-weights kernel is
// slow on these shapes (about 23 GFLOP/s in bf16 with AMX, against about 250 for the 3×3 convolutions: see
// docs/benchmarks.md). The Keras kernel [kh, kw, F, C] is the inner product's {kh·kw·F, C} weights as it is.
#include "../edge.hpp"
#include "../layout.hpp"
#include "../relayout.hpp"
#include "../weights.hpp"
#include "activation.hpp"
#include "registry.hpp"

#include <cstring>

namespace onednn {
namespace {

class Conv2DTransposeTaps : public Layer {
 public:
  Conv2DTransposeTaps(const NodeSpec& node, LayerBuilder& b, int64_t kh, int64_t kw) {
    const Shape& in = b.input(0).shape;
    const int64_t H = in[0], W = in[1], C = in[2], F = node.attr_int("filters");
    const int64_t OH = H * kh, OW = W * kw, N = b.batch(), rows = N * H * W, taps = kh * kw * F;
    const bool use_bias = node.attr_bool("use_bias", true);
    act_ = PostActivation(activation_spec(node.attr_string("activation", "linear"), node));
    b.check_shape({OH, OW, F});
    Param& kernel = b.param("kernel", {kh, kw, F, C});
    bias_ = use_bias ? &b.param("bias", {F}) : nullptr;
    out_ = &b.output();
    const dt type = b.compute_type();
    const dnnl::engine& e = b.engine();

    const md keras_kernel({taps, C}, dt::f32, dnnl::memory::dims{C, 1});
    const md src({rows, C}, type, dnnl::memory::dims{C, 1});
    const md patches({rows, taps}, type, dnnl::memory::dims{taps, 1});
    const md taps_bias = bias_ ? md({taps}, dt::f32, dnnl::memory::dims{1}) : md();
    const md weights = type == dt::f32 ? keras_kernel : md({taps, C}, type, tag::any);
    if (bias_) expanded_bias_ = dnnl::memory(taps_bias, e);

    dnnl::primitive_attr attr = b.attr();
    act_.add_to(attr);
    const dnnl::inner_product_forward::primitive_desc pd({b.forward_kind(), src, weights, taps_bias, patches}, attr, e);
    fwd_ = dnnl::inner_product_forward(pd);
    // The input in the compute type as the graph lays it out (nhwc), read by the inner product as rows of C.
    in_ = Edge(b, b.input(0), canonical_md(N, in, type));
    src_rows_ = Alias(src, e);
    diff_src_rows_ = Alias(src, e);
    patches_ = b.transient(patches);
    const md image = canonical_md(N, {OH, OW, F}, type);
    const dnnl::memory dst = act_.finish(b, image);
    // The patch of input pixel (n, h, w) is the output's rows h·kh … h·kh + kh − 1, columns w·kw … w·kw + kw − 1.
    // As 4-D (N·H, W, kh, kw·F): rows of the image and the patch's rows, each kw·F values long in both.
    const dnnl::memory::dims four{N * H, W, kh, kw * F};
    const md as_rows(four, type, dnnl::memory::dims{W * taps, taps, kw * F, 1});
    const md as_image(four, type, dnnl::memory::dims{kh * OW * F, kw * F, OW * F, 1});
    scatter_ = Relayout(dnnl::memory(as_rows, e, patches_.get_data_handle()), dnnl::memory(as_image, e, dst.get_data_handle()));
    kernel_ = WeightsView(b, kernel, keras_kernel);
    fwd_args_ = {{DNNL_ARG_SRC, src_rows_.mem()}, {DNNL_ARG_WEIGHTS, kernel_.compute(pd.weights_desc())},
                 {DNNL_ARG_DST, patches_}};
    if (bias_) fwd_args_[DNNL_ARG_BIAS] = expanded_bias_;
    b.use_scratchpad(pd, fwd_args_);
    if (!b.backward()) return;

    diff_patches_ = b.transient_grad(patches);
    diff_image_ = Alias(as_image, e);
    gather_args_ = {{DNNL_ARG_TO, dnnl::memory(as_rows, e, diff_patches_.get_data_handle())}};
    gather_ = dnnl::reorder(dnnl::reorder::primitive_desc(e, as_image, e, as_rows));
    const dnnl::inner_product_backward_weights::primitive_desc wpd({src, keras_kernel, taps_bias, patches}, b.attr(), e, pd);
    bwd_weights_ = dnnl::inner_product_backward_weights(wpd);
    kernel_grad_ = GradSink(b, kernel, keras_kernel, wpd.diff_weights_desc());
    bwd_weights_args_ = {{DNNL_ARG_SRC, src_rows_.mem()}, {DNNL_ARG_DIFF_DST, diff_patches_}};
    if (bias_) {
      taps_bias_grad_ = dnnl::memory(taps_bias, e);
      bias_grad_ = GradSink(b, *bias_, row_major_md({F}), row_major_md({F}));
      bwd_weights_args_[DNNL_ARG_DIFF_BIAS] = taps_bias_grad_;
    }
    b.use_scratchpad(wpd, bwd_weights_args_);
    if (!in_.needs_grad()) return;
    const dnnl::inner_product_backward_data::primitive_desc dpd({src, weights, patches}, b.attr(), e, pd);
    bwd_data_ = dnnl::inner_product_backward_data(dpd);
    bwd_data_args_ = {{DNNL_ARG_WEIGHTS, kernel_.compute(dpd.weights_desc())}, {DNNL_ARG_DIFF_DST, diff_patches_}};
    b.use_scratchpad(dpd, bwd_data_args_);
  }

  void forward(const Exec& exec) override {
    in_.forward(exec);
    kernel_.refresh(exec);
    if (bias_) {  // every tap of a filter adds that filter's bias
      const auto* bias = static_cast<const float*>(bias_->value.get_data_handle());
      auto* expanded = static_cast<float*>(expanded_bias_.get_data_handle());
      const size_t F = bias_->value.get_desc().get_size() / sizeof(float);
      const size_t taps = expanded_bias_.get_desc().get_size() / sizeof(float);
      for (size_t t = 0; t < taps; t += F) std::memcpy(expanded + t, bias, F * sizeof(float));
    }
    fwd_args_[DNNL_ARG_SRC] = src_rows_.over(in_.mem());
    exec.run(fwd_, fwd_args_);
    scatter_.run(exec);
    act_.forward(exec);
  }

  void backward(const Exec& exec) override {
    read_diff(*out_);
    const dnnl::memory& diff = act_.backward(exec, out_->diff);
    gather_args_[DNNL_ARG_FROM] = diff_image_.over(diff);
    exec.run(gather_, gather_args_);
    bwd_weights_args_[DNNL_ARG_SRC] = src_rows_.over(in_.mem());
    bwd_weights_args_[DNNL_ARG_DIFF_WEIGHTS] = kernel_grad_.target(exec);
    exec.run(bwd_weights_, bwd_weights_args_);
    kernel_grad_.commit(exec);
    if (bias_) {  // a filter's bias gradient is the sum over its taps
      const dnnl::memory target = bias_grad_.target(exec);
      auto* grad = static_cast<float*>(target.get_data_handle());
      const auto* per_tap = static_cast<const float*>(taps_bias_grad_.get_data_handle());
      const size_t F = target.get_desc().get_size() / sizeof(float);
      const size_t taps = taps_bias_grad_.get_desc().get_size() / sizeof(float);
      for (size_t f = 0; f < F; ++f) {
        float sum = 0;
        for (size_t t = f; t < taps; t += F) sum += per_tap[t];
        grad[f] = sum;
      }
      bias_grad_.commit(exec);
    }
    if (!in_.needs_grad()) return;
    kernel_.refresh(exec);
    bwd_data_args_[DNNL_ARG_DIFF_SRC] = diff_src_rows_.over(in_.begin_diff());
    exec.run(bwd_data_, bwd_data_args_);
    in_.end_diff(exec);
  }

 private:
  Edge in_;
  Value* out_ = nullptr;
  Param* bias_ = nullptr;
  PostActivation act_;
  WeightsView kernel_;
  GradSink kernel_grad_, bias_grad_;
  dnnl::memory patches_, diff_patches_, expanded_bias_, taps_bias_grad_;
  Alias src_rows_, diff_src_rows_, diff_image_;
  Relayout scatter_;
  dnnl::reorder gather_;
  dnnl::primitive fwd_, bwd_weights_, bwd_data_;
  Args fwd_args_, gather_args_, bwd_weights_args_, bwd_data_args_;
};

}  // namespace

std::unique_ptr<Layer> make_conv2d_transpose_taps(const NodeSpec& node, LayerBuilder& builder, int64_t kh, int64_t kw) {
  return std::make_unique<Conv2DTransposeTaps>(node, builder, kh, kw);
}

}  // namespace onednn
