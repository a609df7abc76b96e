// batch_norm with the relu6 that reads it, in float32, as one layer on our own kernels (norm_clip.hpp): the
// forward writes the clipped value, the backward passes the gradient only where the clip did not act, and neither
// makes a pass over memory for the relu6 of its own. The plan chooses this layer (batch_norm_activation_pairs);
// training and inference semantics are batch_norm.cpp's.
#include "../edge.hpp"
#include "../norm_clip.hpp"
#include "../weights.hpp"
#include "batch_norm_spec.hpp"
#include "registry.hpp"

#include <optional>

namespace onednn {
namespace {

class BatchNormRelu6 : public Layer {
 public:
  BatchNormRelu6(const NodeSpec& node, LayerBuilder& b) : spec_(read_batch_norm(node, b)) {
    const md given = b.compute_desc(b.input(0));
    if (given.data_type() != dt::f32)
      node.fail(RAMJET_ERR_INTERNAL, "a relu6 is fused into a batch_norm only in float32");
    // The producer's layout when it has runs of 16 or 8 channels, else a copy blocked by 16.
    const md wanted = channel_runs(given) ? given : channel_blocked(given);
    const std::optional<ChannelRuns> runs = channel_runs(wanted);
    if (!runs) node.fail(RAMJET_ERR_INTERNAL, "the fused batch_norm and relu6 cannot read its input's layout");
    runs_ = *runs;
    in_ = Edge(b, b.input(0), wanted);
    out_ = &b.output();
    b.define_output(wanted);
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
    const float* x = floats(in_.mem());
    if (exec.training) {
      channel_moments(x, runs_, floats(mean_), floats(variance_));
      move_statistics(spec_, floats(mean_), floats(variance_));
      return normalize_clip(x, runs_, batch_statistics(), kRelu6, floats(out_->mem));
    }
    const NormInputs moving{spec_.moving_mean->data(), spec_.moving_variance->data(), spec_.gamma->data(),
                            spec_.beta->data(), spec_.epsilon};
    normalize_clip(x, runs_, moving, kRelu6, floats(out_->mem));
  }

  void backward(const Exec& exec) override {
    const dnnl::memory& dy = read_diff(*out_);
    const dnnl::memory dx = in_.needs_grad() ? in_.begin_diff() : dnnl::memory();
    const dnnl::memory dgamma = gamma_grad_.target(exec);
    const dnnl::memory dbeta = beta_grad_.target(exec);
    exec.stream.wait();
    norm_clip_backward(floats(in_.mem()), floats(dy), runs_, batch_statistics(), kRelu6, dx ? floats(dx) : nullptr,
                       floats(dgamma), floats(dbeta));
    gamma_grad_.commit(exec);
    beta_grad_.commit(exec);
    if (in_.needs_grad()) in_.end_diff(exec);
  }

 private:
  static constexpr ClipBounds kRelu6{0.0f, 6.0f};

  NormInputs batch_statistics() const {
    return {floats(mean_), floats(variance_), spec_.gamma->data(), spec_.beta->data(), spec_.epsilon};
  }

  BatchNormSpec spec_;
  Edge in_;
  ChannelRuns runs_;
  Value* out_ = nullptr;
  dnnl::memory mean_, variance_;  // the last training batch's statistics
  GradSink gamma_grad_, beta_grad_;
};

}  // namespace

std::unique_ptr<Layer> make_batch_norm_relu6(const NodeSpec& node, LayerBuilder& builder) {
  return std::make_unique<BatchNormRelu6>(node, builder);
}

}  // namespace onednn
