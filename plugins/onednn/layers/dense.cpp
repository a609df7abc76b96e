// dense: Keras Dense on a rank-1 input (dense_rows.cpp takes higher ranks). Kernel [in, out], bias [out]; the
// activation fused where the backward allows.
#include "../edge.hpp"
#include "../layout.hpp"
#include "../weights.hpp"
#include "activation.hpp"
#include "layer_skeletons.hpp"
#include "registry.hpp"

#include <ramjet/sdk/gradient_pieces.hpp>

#include <algorithm>

namespace onednn {
namespace {

class Dense : public WeightedLayer {
 public:
  Dense(const NodeSpec& node, LayerBuilder& b) {
    if (b.input_count() != 1) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "dense takes one input");
    b.require_rank(1, "a vector [features] (put a flatten before it)");
    const int64_t IN = b.input(0).shape[0];
    const int64_t U = node.attr_int("units");
    if (U < 1) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "units must be >= 1");
    const bool use_bias = node.attr_bool("use_bias", true);
    act_ = PostActivation(activation_spec(node.attr_string("activation", "linear"), node));
    b.check_shape({U});
    Param& kernel = b.param("kernel", {IN, U});
    Param* bias = use_bias ? &b.param("bias", {U}) : nullptr;
    out_ = &b.output();

    const int64_t N = b.batch();
    const dt type = b.compute_type();
    // oneDNN weights are {out, in}; the Keras [in, out] buffer is their transpose, which the gemm-based inner
    // product reads as it is: no copy of the (often largest) weight matrix on either pass in float32. The weight
    // gradient is float32 in that layout in both precisions (oneDNN accumulates bf16 products in f32).
    const md keras_kernel({U, IN}, dt::f32, {1, U});
    const md bias_md = bias ? row_major_md({U}) : md();
    const md src = b.compute_desc(b.input(0));
    const md dst_any({N, U}, type, tag::any);
    // In bf16 the kernel is copied anyway (converted), so let the primitive pick the copy's layout.
    const md weights = type == dt::f32 ? keras_kernel : md({U, IN}, type, tag::any);

    dnnl::primitive_attr attr = b.attr();
    act_.add_to(attr);
    const dnnl::inner_product_forward::primitive_desc pd({b.forward_kind(), src, weights, bias_md, dst_any}, attr,
                                                         b.engine());
    fwd_ = dnnl::inner_product_forward(pd);
    in_ = Edge(b, b.input(0), pd.src_desc());
    const dnnl::memory dst = act_.finish(b, pd.dst_desc());
    kernel_ = WeightsView(b, kernel, keras_kernel);
    fwd_args_ = {{DNNL_ARG_SRC, in_.mem()}, {DNNL_ARG_WEIGHTS, kernel_.compute(pd.weights_desc())}, {DNNL_ARG_DST, dst}};
    if (bias) fwd_args_[DNNL_ARG_BIAS] = bias->value;
    b.use_scratchpad(pd, fwd_args_);
    if (!b.backward()) return;

    // A kernel gradient larger than a piece the host sends alone is computed in the host's row blocks, each one
    // product of a block of the input's columns and the output's gradient, both plain row-major here.
    const int64_t block = ramjet::gradient_piece_rows(IN, U * static_cast<int64_t>(sizeof(float)));
    if (type == dt::f32 && block < IN && pd.src_desc() == md({N, IN}, dt::f32, tag::ab) &&
        pd.dst_desc() == md({N, U}, dt::f32, tag::ab)) {
      block_rows_ = block;
      bias_param_ = bias;
      batch_ = N;
      units_ = U;
    }
    const dnnl::inner_product_backward_weights::primitive_desc wpd(
        {pd.src_desc(), keras_kernel, bias_md, pd.dst_desc()}, b.attr(), b.engine(), pd);
    bwd_weights_ = dnnl::inner_product_backward_weights(wpd);
    kernel_grad_ = GradSink(b, kernel, keras_kernel, wpd.diff_weights_desc());
    if (bias) bias_grad_ = GradSink(b, *bias, bias_md, wpd.diff_bias_desc());
    bwd_weights_args_ = {{DNNL_ARG_SRC, in_.mem()}};
    b.use_scratchpad(wpd, bwd_weights_args_);

    if (!in_.needs_grad()) return;
    const dnnl::inner_product_backward_data::primitive_desc dpd({pd.src_desc(), weights, pd.dst_desc()}, b.attr(),
                                                                b.engine(), pd);
    bwd_data_ = dnnl::inner_product_backward_data(dpd);
    bwd_data_args_ = {{DNNL_ARG_WEIGHTS, kernel_.compute(dpd.weights_desc())}};
    b.use_scratchpad(dpd, bwd_data_args_);
  }

 private:
  // d kernel = inputᵀ · d output, rows [r, r + block) at a time, each reported final as it lands; the bias's
  // gradient (the output gradient's column sums) first, whole.
  bool own_weight_gradients(const Exec& exec, const dnnl::memory& diff) override {
    if (block_rows_ == 0 || !exec.reports_gradient_rows(kernel_.param())) return false;
    Param& kernel = kernel_.param();
    const int64_t N = batch_, U = units_, IN = kernel.shape[0];
    const float* x = floats(in_.mem());
    const float* dy = floats(diff);
    if (bias_param_ != nullptr) {
      float* g = bias_param_->grad_data();
      if (!exec.accumulates(*bias_param_)) std::fill(g, g + U, 0.0f);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t u = 0; u < U; ++u) g[u] += dy[n * U + u];
      exec.gradient_done(*bias_param_);
    }
    const float beta = exec.accumulates(kernel) ? 1.0f : 0.0f;
    float* g = kernel.grad_data();
    for (int64_t r = 0; r < IN; r += block_rows_) {
      const int64_t rows = std::min(block_rows_, IN - r);
      dnnl::error::wrap_c_api(dnnl_sgemm('T', 'N', rows, U, N, 1.0f, x + r, IN, dy, U, beta, g + r * U, U),
                              "could not compute a block of a dense layer's weight gradient");
      exec.gradient_rows_done(kernel, r + rows);
    }
    exec.gradient_done(kernel);
    return true;
  }

  int64_t block_rows_ = 0;  // 0: the primitive computes the weight gradient whole
  int64_t batch_ = 0, units_ = 0;
  Param* bias_param_ = nullptr;
};

}  // namespace

std::unique_ptr<Layer> make_dense(const NodeSpec& node, LayerBuilder& builder) {
  if (builder.input_count() == 1 && builder.input(0).shape.size() > 1) return make_dense_rows(node, builder);
  return std::make_unique<Dense>(node, builder);
}

}  // namespace onednn
