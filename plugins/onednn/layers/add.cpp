// add: the element-wise sum of two or more inputs of one shape (residual connections). Inputs in another layout
// than the first are reordered to it; the gradient of each input is the output's. Two inputs are added by oneDNN's
// binary primitive, with the relu or relu6 that reads the sum as its post-op when the plan fused one in
// (activation_pairs): a residual block's add and relu then make one pass over memory, forward and backward, and
// the relu keeps no output of its own (backward: the gradient through the clip written to both inputs at once,
// clip_grad_to_both). More inputs go through the sum primitive.
#include "../edge.hpp"
#include "../kernels.hpp"
#include "../norm_clip.hpp"
#include "activation.hpp"
#include "registry.hpp"

namespace onednn {
namespace {

class Add : public Layer {
 public:
  Add(const NodeSpec& node, LayerBuilder& b) {
    if (b.input_count() < 2) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "add takes two or more inputs");
    for (size_t i = 1; i < b.input_count(); ++i)
      if (b.input(i).shape != b.input(0).shape)
        node.fail(RAMJET_ERR_INVALID_ARGUMENT, "inputs '" + b.input(0).name + "' " + shape_string(b.input(0).shape) +
                                                   " and '" + b.input(i).name + "' " + shape_string(b.input(i).shape) +
                                                   " differ in shape (add does not broadcast)");
    b.check_shape(b.input(0).shape);
    const md desc = b.compute_desc(b.input(0));
    std::vector<md> sources;
    for (size_t i = 0; i < b.input_count(); ++i) {
      in_.emplace_back(b, b.input(i), desc);
      sources.push_back(desc);
    }
    const std::string& fused = b.fused_activation();
    act_ = PostActivation(activation_spec(fused.empty() ? "linear" : fused, node));
    if (in_.size() == 2) {
      dnnl::primitive_attr attr = b.attr();
      act_.add_to(attr);
      const dnnl::binary::primitive_desc pd({dnnl::algorithm::binary_add, desc, desc, desc}, attr, b.engine());
      add_ = dnnl::binary(pd);
      act_.finish(b, desc);
      if (!fused.empty()) clip_ = clip_of(fused);
      out_ = &b.output();
      args_ = {{DNNL_ARG_SRC_0, in_[0].mem()}, {DNNL_ARG_SRC_1, in_[1].mem()}, {DNNL_ARG_DST, out_->mem}};
      b.use_scratchpad(pd, args_);
      return;
    }
    if (!fused.empty()) node.fail(RAMJET_ERR_INTERNAL, "an add of 3+ inputs fuses no activation");
    const dnnl::sum::primitive_desc pd(desc, std::vector<float>(sources.size(), 1.0f), sources, b.engine(), b.attr());
    add_ = dnnl::sum(pd);
    b.define_output(desc);
    out_ = &b.output();
    for (size_t i = 0; i < in_.size(); ++i) args_[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i)] = in_[i].mem();
    args_[DNNL_ARG_DST] = out_->mem;
    b.use_scratchpad(pd, args_);
  }

  void forward(const Exec& exec) override {
    for (const Edge& e : in_) e.forward(exec);
    exec.run(add_, args_);
  }

  void backward(const Exec& exec) override {
    if (clip_ && in_[0].needs_grad() && in_[1].needs_grad() && &in_[0].value() != &in_[1].value()) {
      const dnnl::memory& dy = read_diff(*out_);
      const dnnl::memory first = in_[0].begin_diff(), second = in_[1].begin_diff();
      exec.stream.wait();
      clip_grad_to_both(out_->mem, dy, clip_->lo, clip_->hi, first, second);
      in_[0].end_diff(exec);
      in_[1].end_diff(exec);
      return;
    }
    const dnnl::memory& diff = act_.backward(exec, read_diff(*out_));
    for (Edge& e : in_) {
      if (!e.needs_grad()) continue;
      copy_memory(e.begin_diff(), diff);
      e.end_diff(exec);
    }
  }

 private:
  std::vector<Edge> in_;
  Value* out_ = nullptr;
  PostActivation act_;  // the fused relu or relu6, else the identity
  std::optional<ClipBounds> clip_;  // the fused activation's, for backward
  dnnl::primitive add_;  // binary (two inputs) or sum
  Args args_;
};

}  // namespace

std::unique_ptr<Layer> make_add(const NodeSpec& node, LayerBuilder& builder) {
  return std::make_unique<Add>(node, builder);
}

}  // namespace onednn
