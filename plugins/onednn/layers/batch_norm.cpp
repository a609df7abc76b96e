// batch_norm over the last axis (channels), as Keras's BatchNormalization: in training, normalise with the batch's
// statistics and move moving_mean / moving_variance toward them by (1 - momentum) (biased variance, as Keras 3);
// outside training, normalise with the moving statistics. gamma and beta learn; the moving statistics are
// parameters that do not (the node's "trainable" attribute says which). A relu or relu6 that reads only this node
// is fused into it (the plan's activation_pairs; LayerBuilder::fused_activation): the forward writes the
// clipped value and the backward passes the gradient only where the clip did not act, with no pass over memory for
// the activation of its own.
//
// The layer runs on our own kernels (norm_clip.hpp), in float32 or bf16, not on oneDNN 2.6's batch-norm primitive:
// that fuses only a relu, and over the channels-last bf16 maps of AMX convolutions it ran at about 15 GB/s, a
// quarter of a bf16 ResNet step. In float32 over channel-blocked maps the two ran the ResNet alike. Where the
// convolution before it runs in chunks, that convolution sums the statistics' runs on each chunk (norm_link.hpp).
#include "../edge.hpp"
#include "../norm_clip.hpp"
#include "../norm_link.hpp"
#include "../weights.hpp"
#include "registry.hpp"

#include <optional>

namespace onednn {
namespace {

struct BatchNormSpec {
  float epsilon = 1e-3f;
  float momentum = 0.99f;
  Param* gamma = nullptr;
  Param* beta = nullptr;
  Param* moving_mean = nullptr;
  Param* moving_variance = nullptr;
};

// One input of rank 1 ([C]) or 3 ([H, W, C]), epsilon > 0, momentum in [0, 1], and the four parameters of shape [C].
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

// After a training forward: the moving statistics move toward the batch's by (1 - momentum), as Keras's.
void move_statistics(const BatchNormSpec& spec, const float* batch_mean, const float* batch_variance) {
  const float keep = spec.momentum;
  float* mm = spec.moving_mean->data();
  float* mv = spec.moving_variance->data();
  for (size_t c = 0; c < spec.moving_mean->count(); ++c) {
    mm[c] = keep * mm[c] + (1.0f - keep) * batch_mean[c];
    mv[c] = keep * mv[c] + (1.0f - keep) * batch_variance[c];
  }
}

class BatchNorm : public Layer {
 public:
  BatchNorm(const NodeSpec& node, LayerBuilder& b, ClipBounds clip) : spec_(read_batch_norm(node, b)), clip_(clip) {
    const md given = b.compute_desc(b.input(0));
    // The producer's layout when it has runs of channels, else a copy blocked by 16.
    const bool in_place = channel_runs(given).has_value();
    const md wanted = in_place ? given : channel_blocked(given);
    const std::optional<ChannelRuns> runs = channel_runs(wanted);
    if (!runs) node.fail(RAMJET_ERR_INTERNAL, "batch_norm cannot read its input's layout");
    runs_ = *runs;
    scratch_ = NormScratch(runs_);
    in_ = Edge(b, b.input(0), wanted);
    out_ = &b.output();
    b.define_output(wanted);
    // The convolution's chunks sum the statistics, where this layer reads the convolution's own buffer (no copy).
    if (b.norm_link() && b.norm_link()->offered && in_place && given == b.input(0).mem.get_desc()) {
      link_ = b.norm_link();
      link_->runs = &runs_;
      link_->scratch = &scratch_;
    }
    const md per_channel({runs_.channels}, dt::f32, tag::a);
    mean_ = b.transient(per_channel);
    variance_ = b.transient(per_channel);
    if (!b.backward()) return;
    gamma_grad_ = GradSink(b, *spec_.gamma, spec_.gamma->value.get_desc(), per_channel);
    beta_grad_ = GradSink(b, *spec_.beta, spec_.beta->value.get_desc(), per_channel);
  }

  void forward(const Exec& exec) override {
    in_.forward(exec);
    exec.stream.wait();
    const void* x = in_.mem().get_data_handle();
    void* y = out_->mem.get_data_handle();
    if (exec.training) {
      if (link_)  // the convolution's chunks summed the runs
        finish_moments(runs_, scratch_, floats(mean_), floats(variance_));
      else
        channel_moments(x, runs_, scratch_, floats(mean_), floats(variance_));
      move_statistics(spec_, floats(mean_), floats(variance_));
      return normalize_clip(x, runs_, batch_statistics(), clip_, scratch_, y);
    }
    const NormInputs moving{spec_.moving_mean->data(), spec_.moving_variance->data(), spec_.gamma->data(),
                            spec_.beta->data(), spec_.epsilon};
    normalize_clip(x, runs_, moving, clip_, scratch_, y);
  }

  void backward(const Exec& exec) override {
    const dnnl::memory& dy = read_diff(*out_);
    const dnnl::memory dx = in_.needs_grad() ? in_.begin_diff() : dnnl::memory();
    const dnnl::memory dgamma = gamma_grad_.target(exec);
    const dnnl::memory dbeta = beta_grad_.target(exec);
    exec.stream.wait();
    norm_clip_backward(in_.mem().get_data_handle(), dy.get_data_handle(), runs_, batch_statistics(), clip_, scratch_,
                       dx ? dx.get_data_handle() : nullptr, floats(dgamma), floats(dbeta));
    gamma_grad_.commit(exec);
    beta_grad_.commit(exec);
    if (in_.needs_grad()) in_.end_diff(exec);
  }

 private:
  NormInputs batch_statistics() const {
    return {floats(mean_), floats(variance_), spec_.gamma->data(), spec_.beta->data(), spec_.epsilon};
  }

  BatchNormSpec spec_;
  ClipBounds clip_;
  Edge in_;
  ChannelRuns runs_;
  NormScratch scratch_;  // the kernels' working memory, made once
  NormLink* link_ = nullptr;  // to the convolution before it, where this layer took its offer
  Value* out_ = nullptr;
  dnnl::memory mean_, variance_;  // the last training batch's statistics
  GradSink gamma_grad_, beta_grad_;
};

}  // namespace

std::unique_ptr<Layer> make_batch_norm(const NodeSpec& node, LayerBuilder& builder) {
  const std::optional<ClipBounds> clip = clip_of(builder.fused_activation());
  if (!clip) node.fail(RAMJET_ERR_INTERNAL, "no batch_norm kernel fuses a " + builder.fused_activation());
  return std::make_unique<BatchNorm>(node, builder, *clip);
}

}  // namespace onednn
