// batch_norm over the last axis (channels), as Keras's BatchNormalization: in training, normalise with the batch's
// statistics and move moving_mean / moving_variance toward them by (1 - momentum) (biased variance, as Keras 3);
// outside training, normalise with the moving statistics. gamma and beta learn; the moving statistics are
// parameters that do not (the node's "trainable" attribute says which). A relu that reads only this node can be
// fused into it (LayerBuilder::relu_follows); a relu6 in float32 is fused by batch_norm_clip.cpp instead.
#include "../edge.hpp"
#include "../weights.hpp"
#include "batch_norm_spec.hpp"
#include "registry.hpp"

namespace onednn {

BatchNormSpec read_batch_norm(const NodeSpec& node, LayerBuilder& b) {
  if (b.input_count() != 1) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "batch_norm takes one input");
  const Shape& shape = b.input(0).shape;
  if (shape.size() != 1 && shape.size() != 3)
    node.fail(RAMJET_ERR_UNSUPPORTED, "batch_norm of a rank-" + std::to_string(shape.size()) +
                                          " value: only vectors [C] and images [H, W, C] are supported");
  b.check_shape(shape);
  const int64_t C = shape.back();
  BatchNormSpec spec;
  spec.epsilon = static_cast<float>(node.attr_number("epsilon", 1e-3));
  spec.momentum = static_cast<float>(node.attr_number("momentum", 0.99));
  if (!(spec.epsilon > 0) || !(spec.momentum >= 0 && spec.momentum <= 1))
    node.fail(RAMJET_ERR_INVALID_ARGUMENT, "epsilon must be > 0 and momentum in [0, 1]");
  spec.gamma = &b.param("gamma", {C});
  spec.beta = &b.param("beta", {C});
  spec.moving_mean = &b.param("moving_mean", {C});
  spec.moving_variance = &b.param("moving_variance", {C});
  return spec;
}

void move_statistics(const BatchNormSpec& spec, const float* batch_mean, const float* batch_variance) {
  const float keep = spec.momentum;
  float* mm = spec.moving_mean->data();
  float* mv = spec.moving_variance->data();
  for (size_t c = 0; c < spec.moving_mean->count(); ++c) {
    mm[c] = keep * mm[c] + (1.0f - keep) * batch_mean[c];
    mv[c] = keep * mv[c] + (1.0f - keep) * batch_variance[c];
  }
}

namespace {

class BatchNorm : public Layer {
 public:
  BatchNorm(const NodeSpec& node, LayerBuilder& b) : spec_(read_batch_norm(node, b)) {
    const float epsilon = spec_.epsilon;
    Param& gamma = *spec_.gamma;
    Param& beta = *spec_.beta;
    out_ = &b.output();

    using flags = dnnl::normalization_flags;
    const md src = b.compute_desc(b.input(0));  // bf16 data, float32 statistics, scale and shift
    in_ = Edge(b, b.input(0), src);
    // With a relu fused (the plan's choice), the training forward records where it clipped in a workspace that the
    // backward reads.
    const flags own = flags::use_scale | flags::use_shift | (b.relu_follows() ? flags::fuse_norm_relu : flags::none);
    const dnnl::batch_normalization_forward::primitive_desc train({dnnl::prop_kind::forward_training, src, epsilon, own},
                                                                  b.attr(), b.engine());
    const dnnl::batch_normalization_forward::primitive_desc infer(
        {dnnl::prop_kind::forward_inference, src, epsilon, own | flags::use_global_stats}, b.attr(), b.engine());
    train_ = dnnl::batch_normalization_forward(train);
    infer_ = dnnl::batch_normalization_forward(infer);
    b.define_output(train.dst_desc());
    mean_ = b.transient(train.mean_desc());
    variance_ = b.transient(train.variance_desc());
    train_args_ = {{DNNL_ARG_SRC, in_.mem()},  {DNNL_ARG_DST, out_->mem},     {DNNL_ARG_SCALE, gamma.value},
                   {DNNL_ARG_SHIFT, beta.value}, {DNNL_ARG_MEAN, mean_}, {DNNL_ARG_VARIANCE, variance_}};
    infer_args_ = {{DNNL_ARG_SRC, in_.mem()},  {DNNL_ARG_DST, out_->mem},
                   {DNNL_ARG_SCALE, gamma.value}, {DNNL_ARG_SHIFT, beta.value},
                   {DNNL_ARG_MEAN, spec_.moving_mean->value}, {DNNL_ARG_VARIANCE, spec_.moving_variance->value}};
    if (b.relu_follows()) train_args_[DNNL_ARG_WORKSPACE] = b.transient(train.workspace_desc());
    b.use_scratchpad(train, train_args_);
    b.use_scratchpad(infer, infer_args_);
    if (!b.backward()) return;

    const dnnl::batch_normalization_backward::primitive_desc bwd(
        {dnnl::prop_kind::backward, train.dst_desc(), src, epsilon, own}, b.attr(), b.engine(), train);
    bwd_ = dnnl::batch_normalization_backward(bwd);
    gamma_grad_ = GradSink(b, gamma, gamma.value.get_desc(), bwd.diff_weights_desc());
    beta_grad_ = GradSink(b, beta, beta.value.get_desc(), bwd.diff_weights_desc());
    // The primitive always produces d loss / d input; a first layer's goes to a buffer nobody reads.
    if (!in_.needs_grad()) unused_diff_ = b.transient_grad(src);
    bwd_args_ = {{DNNL_ARG_SRC, in_.mem()},     {DNNL_ARG_MEAN, mean_},       {DNNL_ARG_VARIANCE, variance_},
                 {DNNL_ARG_SCALE, gamma.value}, {DNNL_ARG_SHIFT, beta.value}};  // oneDNN 2.6 asks for the shift too
    if (b.relu_follows()) bwd_args_[DNNL_ARG_WORKSPACE] = train_args_.at(DNNL_ARG_WORKSPACE);
    b.use_scratchpad(bwd, bwd_args_);
  }

  void forward(const Exec& exec) override {
    in_.forward(exec);
    if (!exec.training) return exec.run(infer_, infer_args_);
    exec.run(train_, train_args_);
    exec.stream.wait();
    move_statistics(spec_, floats(mean_), floats(variance_));
  }

  void backward(const Exec& exec) override {
    bwd_args_[DNNL_ARG_DIFF_DST] = read_diff(*out_);
    bwd_args_[DNNL_ARG_DIFF_SRC] = in_.needs_grad() ? in_.begin_diff() : unused_diff_;
    bwd_args_[DNNL_ARG_DIFF_SCALE] = gamma_grad_.target(exec);
    bwd_args_[DNNL_ARG_DIFF_SHIFT] = beta_grad_.target(exec);
    exec.run(bwd_, bwd_args_);
    gamma_grad_.commit(exec);
    beta_grad_.commit(exec);
    if (in_.needs_grad()) in_.end_diff(exec);
  }

 private:
  BatchNormSpec spec_;
  Edge in_;
  Value* out_ = nullptr;
  dnnl::memory mean_, variance_, unused_diff_;  // the last training batch's statistics
  GradSink gamma_grad_, beta_grad_;
  dnnl::batch_normalization_forward train_, infer_;
  dnnl::batch_normalization_backward bwd_;
  Args train_args_, infer_args_, bwd_args_;
};

}  // namespace

std::unique_ptr<Layer> make_batch_norm(const NodeSpec& node, LayerBuilder& builder) {
  if (builder.fused_activation() == "relu6") return make_batch_norm_relu6(node, builder);
  return std::make_unique<BatchNorm>(node, builder);
}

}  // namespace onednn
