// Normalization over the last axis. layer_norm: oneDNN's layer normalization with Keras's gamma (scale) and beta
// (shift), y = (x − mean) / sqrt(var + epsilon) · gamma + beta. rms_norm: Keras's RMSNormalization,
// y = x / sqrt(mean(x²) + epsilon) · scale, in a loop of its own (oneDNN 2 has no primitive for it).
#include "../edge.hpp"
#include "../kernels.hpp"
#include "../weights.hpp"
#include "matmul_views.hpp"
#include "registry.hpp"

#include <cmath>

namespace onednn {
namespace {

class LayerNorm : public Layer {
 public:
  LayerNorm(const NodeSpec& node, LayerBuilder& b) {
    if (b.input_count() != 1) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "layer_norm takes one input");
    const Shape& shape = b.input(0).shape;
    b.check_shape(shape);
    const int64_t D = shape.back();
    const float epsilon = static_cast<float>(node.attr_number("epsilon", 1e-3));
    const dnnl::engine& e = b.engine();
    // oneDNN normalizes the last axis of a plain tensor: the value as rows [R, D].
    const md rows = plain_md({row_count(b.batch(), shape), D}, b.compute_type());
    in_ = Edge(b, b.input(0), canonical_md(b.batch(), shape, b.compute_type()));
    b.define_output(canonical_md(b.batch(), shape, b.compute_type()));
    out_ = &b.output();
    auto flags = dnnl::normalization_flags::none;
    const md vec = plain_md({D}, dt::f32);
    if (node.params.count("gamma")) {
      gamma_ = &b.param("gamma", {D});
      flags |= dnnl::normalization_flags::use_scale;
    }
    if (node.params.count("beta")) {
      beta_ = &b.param("beta", {D});
      flags |= dnnl::normalization_flags::use_shift;
    }
    const dnnl::layer_normalization_forward::primitive_desc pd({b.forward_kind(), rows, epsilon, flags}, b.attr(), e);
    fwd_ = dnnl::layer_normalization_forward(pd);
    mean_ = b.transient(pd.mean_desc());
    variance_ = b.transient(pd.variance_desc());
    fwd_args_ = {{DNNL_ARG_SRC, Alias(rows, e, in_.mem()).mem()},
                 {DNNL_ARG_DST, Alias(rows, e, out_->mem).mem()},
                 {DNNL_ARG_MEAN, mean_},
                 {DNNL_ARG_VARIANCE, variance_}};
    if (gamma_) fwd_args_[DNNL_ARG_SCALE] = dnnl::memory(vec, e, gamma_->value.get_data_handle());
    if (beta_) fwd_args_[DNNL_ARG_SHIFT] = dnnl::memory(vec, e, beta_->value.get_data_handle());
    b.use_scratchpad(pd, fwd_args_);
    if (!b.backward() || !out_->needs_grad) return;

    const auto kind = gamma_ || beta_ ? dnnl::prop_kind::backward : dnnl::prop_kind::backward_data;
    const dnnl::layer_normalization_backward::primitive_desc bpd({kind, rows, rows, epsilon, flags}, b.attr(), e, pd);
    bwd_ = dnnl::layer_normalization_backward(bpd);
    // oneDNN writes d src whether the input wants it or not: a buffer of the layer's own when it does not.
    if (!in_.needs_grad()) spare_diff_ = b.transient_grad(rows);
    diff_in_ = Alias(rows, e);
    bwd_args_ = {{DNNL_ARG_SRC, fwd_args_[DNNL_ARG_SRC]},
                 {DNNL_ARG_DIFF_DST, Alias(rows, e, out_->diff).mem()},
                 {DNNL_ARG_MEAN, mean_},
                 {DNNL_ARG_VARIANCE, variance_}};
    if (gamma_) {
      bwd_args_[DNNL_ARG_SCALE] = fwd_args_[DNNL_ARG_SCALE];
      gamma_grad_ = GradSink(b, *gamma_, vec, vec);
    }
    if (beta_) {
      bwd_args_[DNNL_ARG_SHIFT] = fwd_args_[DNNL_ARG_SHIFT];
      beta_grad_ = GradSink(b, *beta_, vec, vec);
    }
    b.use_scratchpad(bpd, bwd_args_);
  }

  void forward(const Exec& exec) override {
    in_.forward(exec);
    exec.run(fwd_, fwd_args_);
  }

  void backward(const Exec& exec) override {
    read_diff(*out_);
    bwd_args_[DNNL_ARG_DIFF_SRC] = in_.needs_grad() ? diff_in_.over(in_.begin_diff()) : spare_diff_;
    if (gamma_grad_) bwd_args_[DNNL_ARG_DIFF_SCALE] = gamma_grad_.target(exec);
    if (beta_grad_) bwd_args_[DNNL_ARG_DIFF_SHIFT] = beta_grad_.target(exec);
    exec.run(bwd_, bwd_args_);
    if (gamma_grad_) gamma_grad_.commit(exec);
    if (beta_grad_) beta_grad_.commit(exec);
    if (in_.needs_grad()) in_.end_diff(exec);
  }

 private:
  Edge in_;
  Value* out_ = nullptr;
  Param* gamma_ = nullptr;
  Param* beta_ = nullptr;
  dnnl::memory mean_, variance_, spare_diff_;
  Alias diff_in_;
  GradSink gamma_grad_, beta_grad_;
  dnnl::layer_normalization_forward fwd_;
  dnnl::layer_normalization_backward bwd_;
  Args fwd_args_, bwd_args_;
};

class RmsNorm : public Layer {
 public:
  RmsNorm(const NodeSpec& node, LayerBuilder& b) {
    if (b.input_count() != 1) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "rms_norm takes one input");
    const Shape& shape = b.input(0).shape;
    b.check_shape(shape);
    D_ = shape.back();
    R_ = row_count(b.batch(), shape);
    epsilon_ = static_cast<float>(node.attr_number("epsilon", 1e-6));
    scale_ = &b.param("scale", {D_});
    const md desc = canonical_md(b.batch(), shape, b.compute_type());
    in_ = Edge(b, b.input(0), desc);
    b.define_output(desc);
    out_ = &b.output();
    inverse_rms_.assign(static_cast<size_t>(R_), 0.0f);
    if (b.backward() && scale_->trainable) {
      const md vec = plain_md({D_}, dt::f32);
      scale_grad_ = GradSink(b, *scale_, vec, vec);
    }
  }

  void forward(const Exec& exec) override {
    in_.forward(exec);
    const Elements x(in_.mem()), y(out_->mem);
    const float* s = scale_->data();
    const int64_t D = D_;
#pragma omp parallel for schedule(static) if (R_ * D >= 32768)
    for (int64_t r = 0; r < R_; ++r) {
      double sum = 0.0;
      for (int64_t j = 0; j < D; ++j) {
        const double v = x.get(r * D + j);
        sum += v * v;
      }
      const float inv = static_cast<float>(1.0 / std::sqrt(sum / static_cast<double>(D) + epsilon_));
      inverse_rms_[static_cast<size_t>(r)] = inv;
      for (int64_t j = 0; j < D; ++j) y.set(r * D + j, x.get(r * D + j) * inv * s[j]);
    }
  }

  // With q = 1 / rms: dx_j = q (s_j dy_j) − x_j q³ mean_k(x_k s_k dy_k);  d scale_j = Σ_rows dy_j x_j q.
  void backward(const Exec& exec) override {
    const Elements x(in_.mem()), dy(read_diff(*out_));
    const float* s = scale_->data();
    const int64_t D = D_;
    if (in_.needs_grad()) {
      const Elements dx(in_.begin_diff());
#pragma omp parallel for schedule(static) if (R_ * D >= 32768)
      for (int64_t r = 0; r < R_; ++r) {
        const float q = inverse_rms_[static_cast<size_t>(r)];
        double dot = 0.0;
        for (int64_t j = 0; j < D; ++j) dot += static_cast<double>(x.get(r * D + j)) * s[j] * dy.get(r * D + j);
        const float c = static_cast<float>(dot / static_cast<double>(D)) * q * q * q;
        for (int64_t j = 0; j < D; ++j) dx.set(r * D + j, q * s[j] * dy.get(r * D + j) - x.get(r * D + j) * c);
      }
      in_.end_diff(exec);
    }
    if (!scale_grad_) return;
    float* g = floats(scale_grad_.target(exec));
#pragma omp parallel for schedule(static) if (R_ * D >= 32768)
    for (int64_t j = 0; j < D; ++j) {
      double sum = 0.0;
      for (int64_t r = 0; r < R_; ++r)
        sum += static_cast<double>(dy.get(r * D + j)) * x.get(r * D + j) * inverse_rms_[static_cast<size_t>(r)];
      g[j] = static_cast<float>(sum);
    }
    scale_grad_.commit(exec);
  }

 private:
  int64_t D_ = 0, R_ = 0;
  float epsilon_ = 1e-6f;
  Param* scale_ = nullptr;
  Edge in_;
  Value* out_ = nullptr;
  std::vector<float> inverse_rms_;
  GradSink scale_grad_;
};

}  // namespace

std::unique_ptr<Layer> make_layer_norm(const NodeSpec& node, LayerBuilder& builder) {
  return std::make_unique<LayerNorm>(node, builder);
}
std::unique_ptr<Layer> make_rms_norm(const NodeSpec& node, LayerBuilder& builder) {
  return std::make_unique<RmsNorm>(node, builder);
}

}  // namespace onednn
