// dense on an input of rank 2 or more ([T, F] → [T, U]): Keras's Dense on the last axis, as one matmul over every
// row of the batch. Kernel [F, U] (Keras), bias [U]; the activation fused where its backward allows.
#include "../edge.hpp"
#include "../kernels.hpp"
#include "../weights.hpp"
#include "activation.hpp"
#include "matmul_views.hpp"
#include "registry.hpp"

namespace onednn {
namespace {

class DenseRows : public Layer {
 public:
  DenseRows(const NodeSpec& node, LayerBuilder& b) {
    if (b.input_count() != 1) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "dense takes one input");
    const Shape& in_shape = b.input(0).shape;
    const int64_t F = in_shape.back(), U = node.attr_int("units");
    if (U < 1) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "units must be >= 1");
    Shape out_shape = in_shape;
    out_shape.back() = U;
    b.check_shape(out_shape);
    const int64_t R = row_count(b.batch(), in_shape);
    const dt type = b.compute_type();
    const dnnl::engine& e = b.engine();
    Param& kernel = b.param("kernel", {F, U});
    Param* bias = node.attr_bool("use_bias", true) ? &b.param("bias", {U}) : nullptr;
    act_ = PostActivation(activation_spec(node.attr_string("activation", "linear"), node));

    in_ = Edge(b, b.input(0), canonical_md(b.batch(), in_shape, type));
    const md rows_in = plain_md({R, F}, type), rows_out = plain_md({R, U}, type);
    const md keras_kernel = plain_md({F, U}, dt::f32);
    kernel_ = WeightsView(b, kernel, keras_kernel);
    const dnnl::memory weights = kernel_.compute(plain_md({F, U}, type));  // the Keras buffer itself in float32
    const md bias_md = bias ? plain_md({1, U}, dt::f32) : md();

    dnnl::primitive_attr attr = b.attr();
    act_.add_to(attr);
    fwd_pd_ = dnnl::matmul::primitive_desc(dnnl::matmul::desc(rows_in, weights.get_desc(), bias_md, rows_out), attr, e);
    fwd_ = dnnl::matmul(fwd_pd_);
    const dnnl::memory written = act_.finish(b, rows_out, canonical_md(b.batch(), out_shape, type));
    out_ = &b.output();
    fwd_args_ = {{DNNL_ARG_SRC, Alias(rows_in, e, in_.mem()).mem()}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, written}};
    if (bias) fwd_args_[DNNL_ARG_BIAS] = dnnl::memory(bias_md, e, bias->value.get_data_handle());
    b.use_scratchpad(fwd_pd_, fwd_args_);
    if (!b.backward() || !out_->needs_grad) return;

    diff_out_ = Alias(rows_out, e, out_->diff);
    // d kernel [F, U] = in^T [F, R] × d out [R, U], in float32 (the gradient's type in both precisions).
    weight_grad_ = MatMul(e, transposed_md(R, F, type), rows_out, keras_kernel);
    in_t_ = Alias(transposed_md(R, F, type), e, in_.mem());
    kernel_grad_ = GradSink(b, kernel, keras_kernel, keras_kernel);
    b.use_scratchpad(weight_grad_.pd, weight_grad_.args);
    if (bias) {
      // d bias [1, U] = ones [1, R] × d out [R, U].
      ones_ = dnnl::memory(plain_md({1, R}, type), e);
      fill_ones(ones_);
      bias_grad_mm_ = MatMul(e, plain_md({1, R}, type), rows_out, bias_md);
      bias_grad_ = GradSink(b, *bias, bias_md, bias_md);
      b.use_scratchpad(bias_grad_mm_.pd, bias_grad_mm_.args);
    }
    if (!in_.needs_grad()) return;
    // d in [R, F] = d out [R, U] × kernel^T [U, F].
    data_grad_ = MatMul(e, rows_out, transposed_md(F, U, type), rows_in);
    weights_t_ = Alias(transposed_md(F, U, type), e, weights);
    diff_in_ = Alias(rows_in, e);
    b.use_scratchpad(data_grad_.pd, data_grad_.args);
  }

  void forward(const Exec& exec) override {
    in_.forward(exec);
    kernel_.refresh(exec);
    exec.run(fwd_, fwd_args_);
    act_.forward(exec);
  }

  void backward(const Exec& exec) override {
    read_diff(*out_);
    const dnnl::memory& diff = act_.backward(exec, diff_out_.mem());
    weight_grad_.run(exec, in_t_.mem(), diff, kernel_grad_.target(exec));
    kernel_grad_.commit(exec);
    if (bias_grad_) {
      bias_grad_mm_.run(exec, ones_, diff, bias_grad_.target(exec));
      bias_grad_.commit(exec);
    }
    if (!in_.needs_grad()) return;
    kernel_.refresh(exec);
    data_grad_.run(exec, diff, weights_t_.mem(), diff_in_.over(in_.begin_diff()));
    in_.end_diff(exec);
  }

 private:
  static void fill_ones(const dnnl::memory& m) {
    Elements x(m);
    const int64_t n = static_cast<int64_t>(m.get_desc().get_size() / (x.bf16 ? 2 : 4));
    for (int64_t i = 0; i < n; ++i) x.set(i, 1.0f);
  }

  Edge in_;
  Value* out_ = nullptr;
  PostActivation act_;
  WeightsView kernel_;
  GradSink kernel_grad_, bias_grad_;
  dnnl::matmul::primitive_desc fwd_pd_;
  dnnl::matmul fwd_;
  Args fwd_args_;
  Alias diff_out_, diff_in_, weights_t_, in_t_;
  dnnl::memory ones_;
  MatMul weight_grad_, bias_grad_mm_, data_grad_;
};

}  // namespace

std::unique_ptr<Layer> make_dense_rows(const NodeSpec& node, LayerBuilder& builder) {
  return std::make_unique<DenseRows>(node, builder);
}

}  // namespace onednn
