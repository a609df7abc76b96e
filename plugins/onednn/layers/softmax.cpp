// softmax over the last axis (channels for images), in the host's row-major layout.
#include "../edge.hpp"
#include "../layout.hpp"
#include "layer_skeletons.hpp"
#include "registry.hpp"

namespace onednn {
namespace {

class Softmax : public ElementwiseLayer {
 public:
  Softmax(const NodeSpec& node, LayerBuilder& b) {
    if (b.input_count() != 1) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "softmax takes one input");
    const Shape& shape = b.input(0).shape;
    if (shape.empty()) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "softmax needs an input of rank 1 or more");
    const int64_t axis = node.attr_int("axis", -1);
    if (axis != -1 && axis != static_cast<int64_t>(shape.size()) - 1)
      node.fail(RAMJET_ERR_UNSUPPORTED, "softmax over axis " + std::to_string(axis) + ": only the last axis is supported");
    b.check_shape(shape);
    const md desc = canonical_md(b.batch(), shape);
    in_ = Edge(b, b.input(0), desc);
    const dnnl::softmax_forward::primitive_desc pd({b.forward_kind(), desc, last_axis(shape)}, b.attr(), b.engine());
    fwd_ = dnnl::softmax_forward(pd);
    b.define_output(desc);
    out_ = &b.output();
    fwd_args_ = {{DNNL_ARG_SRC, in_.mem()}, {DNNL_ARG_DST, out_->mem}};
    b.use_scratchpad(pd, fwd_args_);
    if (!b.backward() || !in_.needs_grad()) return;
    const dnnl::softmax_backward::primitive_desc bpd({desc, desc, last_axis(shape)}, b.attr(), b.engine(), pd);
    bwd_ = dnnl::softmax_backward(bpd);
    bwd_args_ = {{DNNL_ARG_DST, out_->mem}};
    b.use_scratchpad(bpd, bwd_args_);
  }
};

}  // namespace

std::unique_ptr<Layer> make_softmax(const NodeSpec& node, LayerBuilder& builder) {
  return std::make_unique<Softmax>(node, builder);
}

}  // namespace onednn
