// multiply and subtract: two inputs of one shape, element by element (oneDNN's binary primitive; no broadcasting).
// Backward: for a·b, d a = d out · b and d b = d out · a; for a − b, d a = d out and d b = − d out.
#include "../edge.hpp"
#include "../kernels.hpp"
#include "../layout.hpp"
#include "registry.hpp"

namespace onednn {
namespace {

class Binary : public Layer {
 public:
  Binary(const NodeSpec& node, LayerBuilder& b, bool multiply) : multiply_(multiply) {
    if (b.input_count() != 2) node.fail(RAMJET_ERR_INVALID_ARGUMENT, node.op + " takes exactly two inputs");
    if (b.input(0).shape != b.input(1).shape)
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "inputs '" + b.input(0).name + "' " + shape_string(b.input(0).shape) +
                                                 " and '" + b.input(1).name + "' " + shape_string(b.input(1).shape) +
                                                 " differ in shape (" + node.op + " does not broadcast)");
    b.check_shape(b.input(0).shape);
    const md desc = canonical_md(b.batch(), b.input(0).shape, b.compute_type());
    a_ = Edge(b, b.input(0), desc);
    b_ = Edge(b, b.input(1), desc);
    const auto algorithm = multiply ? dnnl::algorithm::binary_mul : dnnl::algorithm::binary_sub;
    const dnnl::binary::primitive_desc pd({algorithm, desc, desc, desc}, b.attr(), b.engine());
    fwd_ = dnnl::binary(pd);
    b.define_output(desc);
    out_ = &b.output();
    fwd_args_ = {{DNNL_ARG_SRC_0, a_.mem()}, {DNNL_ARG_SRC_1, b_.mem()}, {DNNL_ARG_DST, out_->mem}};
    b.use_scratchpad(pd, fwd_args_);
    if (!b.backward() || !out_->needs_grad) return;
    // d a = d out (op) b: the same primitive (multiply), or the gradient as it is (subtract).
    if (multiply) {
      const dnnl::binary::primitive_desc bpd({dnnl::algorithm::binary_mul, desc, desc, desc}, b.attr(), b.engine());
      grad_ = dnnl::binary(bpd);
      b.use_scratchpad(bpd, grad_args_);
    } else {
      const dnnl::eltwise_forward::primitive_desc npd(
          {dnnl::prop_kind::forward_inference, dnnl::algorithm::eltwise_linear, desc, -1.0f, 0.0f}, b.engine());
      negate_ = dnnl::eltwise_forward(npd);
    }
  }

  void forward(const Exec& exec) override {
    a_.forward(exec);
    b_.forward(exec);
    exec.run(fwd_, fwd_args_);
  }

  void backward(const Exec& exec) override {
    const dnnl::memory& diff = read_diff(*out_);
    for (int side = 0; side < 2; ++side) {
      Edge& e = side == 0 ? a_ : b_;
      if (!e.needs_grad()) continue;
      const dnnl::memory target = e.begin_diff();
      if (multiply_) {
        grad_args_[DNNL_ARG_SRC_0] = diff;
        grad_args_[DNNL_ARG_SRC_1] = side == 0 ? b_.mem() : a_.mem();
        grad_args_[DNNL_ARG_DST] = target;
        exec.run(grad_, grad_args_);
      } else if (side == 0) {
        copy_memory(target, diff);
      } else {
        negate_args_[DNNL_ARG_SRC] = diff;
        negate_args_[DNNL_ARG_DST] = target;
        exec.run(negate_, negate_args_);
      }
      e.end_diff(exec);
    }
  }

 private:
  bool multiply_;
  Edge a_, b_;
  Value* out_ = nullptr;
  dnnl::binary fwd_, grad_;
  dnnl::eltwise_forward negate_;
  Args fwd_args_, grad_args_, negate_args_;
};

}  // namespace

std::unique_ptr<Layer> make_multiply(const NodeSpec& node, LayerBuilder& builder) {
  return std::make_unique<Binary>(node, builder, true);
}
std::unique_ptr<Layer> make_subtract(const NodeSpec& node, LayerBuilder& builder) {
  return std::make_unique<Binary>(node, builder, false);
}

}  // namespace onednn
