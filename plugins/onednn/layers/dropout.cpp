// dropout: identity outside training; in training each element is kept with probability 1 - rate and scaled by
// 1 / (1 - rate). The mask is a pure function of (forward seed, node, element), so backward recomputes it instead
// of storing it.
#include "../edge.hpp"
#include "../kernels.hpp"
#include "registry.hpp"

namespace onednn {
namespace {

class Dropout : public Layer {
 public:
  Dropout(const NodeSpec& node, LayerBuilder& b) : salt_(node.index) {
    if (b.input_count() != 1) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "dropout takes one input");
    rate_ = static_cast<float>(node.attr_number("rate", 0.0));
    if (!(rate_ >= 0.0f && rate_ < 1.0f)) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "rate must be in [0, 1)");
    b.check_shape(b.input(0).shape);
    in_ = Edge(b, b.input(0), b.compute_desc(b.input(0)));
    b.define_output(in_.desc());
    out_ = &b.output();
  }

  void forward(const Exec& exec) override {
    masked_ = exec.training && rate_ > 0.0f;
    seed_ = exec.seed;
    if (masked_) dropout_memory(out_->mem, in_.mem(), rate_, seed_, salt_);
    else copy_memory(out_->mem, in_.mem());
  }

  void backward(const Exec& exec) override {
    if (!in_.needs_grad()) return;
    const dnnl::memory& diff = read_diff(*out_);
    const dnnl::memory target = in_.begin_diff();
    if (masked_) dropout_memory(target, diff, rate_, seed_, salt_);
    else copy_memory(target, diff);
    in_.end_diff(exec);
  }

 private:
  Edge in_;
  Value* out_ = nullptr;
  float rate_ = 0.0f;
  uint64_t salt_;
  bool masked_ = false;
  uint64_t seed_ = 0;
};

}  // namespace

std::unique_ptr<Layer> make_dropout(const NodeSpec& node, LayerBuilder& builder) {
  return std::make_unique<Dropout>(node, builder);
}

}  // namespace onednn
