// depth_to_space (tf.nn.depth_to_space, NHWC, DCR order): channel (i * b + j) * C' + c of pixel (h, w) goes to
// pixel (h * b + i, w * b + j), channel c. The nhwc output [N, H*b, W*b, C'] is, byte for byte, the row-major
// [N, H, b, W, b, C']; one reorder reads the input through strides in that order, and backward reads the output's
// gradient the same way back (as transpose does).
#include "../edge.hpp"
#include "../layout.hpp"
#include "registry.hpp"

namespace onednn {
namespace {

class DepthToSpace : public Layer {
 public:
  DepthToSpace(const NodeSpec& node, LayerBuilder& b) {
    if (b.input_count() != 1) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "depth_to_space takes one input");
    b.require_rank(3, "an [H, W, C] image");
    const int64_t bs = node.attr_int("block_size");
    const Shape& in = b.input(0).shape;
    if (bs < 2 || in[2] % (bs * bs) != 0)
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "attribute 'block_size' must be at least 2, its square dividing the " +
                                                 std::to_string(in[2]) + " channels");
    const int64_t H = in[0], W = in[1], C = in[2], Co = C / (bs * bs), N = b.batch();
    b.check_shape({H * bs, W * bs, Co});
    const dt type = b.compute_type();
    const dnnl::engine& e = b.engine();
    in_ = Edge(b, b.input(0), canonical_md(N, in, type));
    b.define_output(canonical_md(N, node.shape, type));
    out_ = &b.output();
    const dnnl::memory::dims dims{N, H, bs, W, bs, Co};
    // The nhwc input [N, H, W, (i, j, c)] walked in the output's order (N, H, i, W, j, c).
    const md in_as_out(dims, type, dnnl::memory::dims{H * W * C, W * C, bs * Co, C, Co, 1});
    const md out_plain(dims, type, row_major_strides(dims));
    forward_ = Relayout(dnnl::memory(in_as_out, e, in_.mem().get_data_handle()),
                        dnnl::memory(out_plain, e, out_->mem.get_data_handle()));
    if (!b.backward() || !in_.needs_grad()) return;
    diff_in_ = Alias(in_as_out, e);
    diff_out_ = Alias(out_plain, e);
    backward_ = dnnl::reorder(dnnl::reorder::primitive_desc(e, out_plain, e, in_as_out));
  }

  void forward(const Exec& exec) override {
    in_.forward(exec);
    forward_.run(exec);
  }

  void backward(const Exec& exec) override {
    if (!in_.needs_grad()) return;
    // Every element of the input's gradient is written: a reorder, not an add (Edge adds a second reader's part).
    backward_args_[DNNL_ARG_FROM] = diff_out_.over(read_diff(*out_));
    backward_args_[DNNL_ARG_TO] = diff_in_.over(in_.begin_diff());
    exec.run(backward_, backward_args_);
    in_.end_diff(exec);
  }

 private:
  Edge in_;
  Value* out_ = nullptr;
  Relayout forward_;
  Alias diff_in_, diff_out_;
  dnnl::reorder backward_;
  Args backward_args_;
};

}  // namespace

std::unique_ptr<Layer> make_depth_to_space(const NodeSpec& node, LayerBuilder& builder) {
  return std::make_unique<DepthToSpace>(node, builder);
}

}  // namespace onednn
