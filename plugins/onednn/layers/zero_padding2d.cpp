// zero_padding2d: an image inside a border of zeros ("padding": [top, bottom, left, right]). Forward zeroes the
// output and reorders the input into its interior (a sub-memory of the nhwc output); backward reorders the
// interior of the output's gradient back (the border's gradient goes nowhere).
#include "../kernels.hpp"
#include "../layout.hpp"
#include "../relayout.hpp"
#include "registry.hpp"

namespace onednn {
namespace {

class ZeroPadding2D : public Layer {
 public:
  ZeroPadding2D(const NodeSpec& node, LayerBuilder& b) {
    if (b.input_count() != 1) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "zero_padding2d takes one input");
    b.require_rank(3, "an [H, W, C] image");
    in_ = &b.input(0);
    const auto p = node.attr_ints("padding", 4);
    for (int64_t v : p)
      if (v < 0) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "attribute 'padding' must not be negative");
    const Shape& in = in_->shape;
    b.check_shape({in[0] + p[0] + p[1], in[1] + p[2] + p[3], in[2]});
    const int64_t N = b.batch();
    const md out_md = canonical_md(N, node.shape, b.compute_type());
    b.define_output(out_md);
    out_ = &b.output();
    // Logical dims {N, C, H, W}: the interior starts at row `top`, column `left`.
    const md interior = out_md.submemory_desc(batch_dims(N, in), {0, 0, p[0], p[2]});
    forward_ = Relayout(in_->mem, dnnl::memory(interior, b.engine(), out_->mem.get_data_handle()));
    if (!b.backward() || !in_->needs_grad) return;
    const dnnl::memory diff(interior, b.engine(), out_->diff.get_data_handle());
    diff_set_ = Relayout(diff, in_->diff);
    diff_add_ = Relayout(diff, in_->diff, /*accumulate=*/true);
  }

  void forward(const Exec& exec) override {
    zero_memory(out_->mem);
    forward_.run(exec);
  }

  void backward(const Exec& exec) override {
    if (!in_->needs_grad) return;
    read_diff(*out_);
    (in_->diff_written ? diff_add_ : diff_set_).run(exec);
    in_->diff_written = true;
  }

 private:
  Value* in_ = nullptr;
  Value* out_ = nullptr;
  Relayout forward_, diff_set_, diff_add_;
};

}  // namespace

std::unique_ptr<Layer> make_zero_padding2d(const NodeSpec& node, LayerBuilder& builder) {
  return std::make_unique<ZeroPadding2D>(node, builder);
}

}  // namespace onednn
