// cropping2d: the interior of an image ("cropping": [top, bottom, left, right] rows and columns dropped). Forward
// reorders a sub-memory of the (nhwc) input into the output; backward zeroes the input's gradient and reorders the
// output's gradient into its interior.
#include "../edge.hpp"
#include "../kernels.hpp"
#include "../layout.hpp"
#include "registry.hpp"

namespace onednn {
namespace {

class Cropping2D : public Layer {
 public:
  Cropping2D(const NodeSpec& node, LayerBuilder& b) {
    if (b.input_count() != 1) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "cropping2d takes one input");
    b.require_rank(3, "an [H, W, C] image");
    const auto c = node.attr_ints("cropping", 4);
    const Shape& in = b.input(0).shape;
    for (int64_t v : c)
      if (v < 0) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "attribute 'cropping' must not be negative");
    if (c[0] + c[1] >= in[0] || c[2] + c[3] >= in[1])
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "attribute 'cropping' removes the whole input " + shape_string(in));
    const Shape out{in[0] - c[0] - c[1], in[1] - c[2] - c[3], in[2]};
    b.check_shape(out);
    const int64_t N = b.batch();
    const dt type = b.compute_type();
    const dnnl::engine& e = b.engine();
    in_ = Edge(b, b.input(0), canonical_md(N, in, type));
    const md out_md = canonical_md(N, out, type);
    b.define_output(out_md);
    out_ = &b.output();
    // Logical dims {N, C, H, W}: the kept part starts at row `top`, column `left`.
    const md interior = in_.desc().submemory_desc(batch_dims(N, out), {0, 0, c[0], c[2]});
    forward_ = Relayout(dnnl::memory(interior, e, in_.mem().get_data_handle()), out_->mem);
    if (!b.backward() || !in_.needs_grad()) return;
    diff_interior_ = Alias(interior, e);
    backward_ = dnnl::reorder(dnnl::reorder::primitive_desc(e, out_md, e, interior));
  }

  void forward(const Exec& exec) override {
    in_.forward(exec);
    forward_.run(exec);
  }

  void backward(const Exec& exec) override {
    if (!in_.needs_grad()) return;
    const dnnl::memory diff = in_.begin_diff();
    zero_memory(diff);  // the cropped border had no effect on the loss
    backward_args_[DNNL_ARG_FROM] = read_diff(*out_);
    backward_args_[DNNL_ARG_TO] = diff_interior_.over(diff);
    exec.run(backward_, backward_args_);
    in_.end_diff(exec);
  }

 private:
  Edge in_;
  Value* out_ = nullptr;
  Relayout forward_;
  Alias diff_interior_;
  dnnl::reorder backward_;
  Args backward_args_;
};

}  // namespace

std::unique_ptr<Layer> make_cropping2d(const NodeSpec& node, LayerBuilder& builder) {
  return std::make_unique<Cropping2D>(node, builder);
}

}  // namespace onednn
