// flatten and reshape: the same bytes read with another shape, in the host's row-major (NHWC) order, so flatten
// matches Keras. Free when the input is already in that layout (the output shares its buffer, and its gradient
// shares the input's when nothing else reads the input); otherwise one reorder each way.
#include "../layout.hpp"
#include "../relayout.hpp"
#include "registry.hpp"

namespace onednn {
namespace {

class Reshape : public Layer {
 public:
  Reshape(const NodeSpec& node, LayerBuilder& b, const Shape& out_shape) {
    if (b.input_count() != 1) node.fail(RAMJET_ERR_INVALID_ARGUMENT, node.op + " takes one input");
    in_ = &b.input(0);
    if (product(out_shape) != product(in_->shape))
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "cannot reshape " + shape_string(in_->shape) + " to " +
                                                 shape_string(out_shape) + ": the element counts differ");
    b.check_shape(out_shape);
    out_ = &b.output();
    const int64_t N = b.batch();
    const dt type = in_->mem.get_desc().data_type();  // bytes move as they are: no conversion here
    const md in_canonical = canonical_md(N, in_->shape, type), out_canonical = canonical_md(N, out_shape, type);
    const bool backward = b.backward() && in_->needs_grad;

    if (in_->mem.get_desc() == in_canonical) {
      shares_diff_ = backward && in_->consumers == 1;
      b.set_output(dnnl::memory(out_canonical, b.engine(), in_->mem.get_data_handle()),
                   shares_diff_ ? in_->diff.get_data_handle() : nullptr);
    } else {
      b.define_output(out_canonical);
      to_out_ = Relayout(in_->mem, dnnl::memory(in_canonical, b.engine(), out_->mem.get_data_handle()));
    }
    if (backward && !shares_diff_) {
      const dnnl::memory out_diff(in_canonical, b.engine(), out_->diff.get_data_handle());
      diff_set_ = Relayout(out_diff, in_->diff);
      diff_add_ = Relayout(out_diff, in_->diff, /*accumulate=*/true);
    }
  }

  void forward(const Exec& exec) override { to_out_.run(exec); }

  void backward(const Exec& exec) override {
    if (!in_->needs_grad) return;
    read_diff(*out_);
    if (!shares_diff_) (in_->diff_written ? diff_add_ : diff_set_).run(exec);
    in_->diff_written = true;
  }

 private:
  Value* in_ = nullptr;
  Value* out_ = nullptr;
  bool shares_diff_ = false;
  Relayout to_out_, diff_set_, diff_add_;
};

}  // namespace

std::unique_ptr<Layer> make_flatten(const NodeSpec& node, LayerBuilder& builder) {
  if (builder.input_count() != 1) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "flatten takes one input");
  return std::make_unique<Reshape>(node, builder, Shape{product(builder.input(0).shape)});
}

// attrs {"shape": [...]} per example; one entry may be -1 (inferred).
std::unique_ptr<Layer> make_reshape(const NodeSpec& node, LayerBuilder& builder) {
  if (builder.input_count() != 1) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "reshape takes one input");
  const Shape shape = node.reshape_target(builder.input(0).shape);
  return std::make_unique<Reshape>(node, builder, shape);
}

}  // namespace onednn
