// resize: an image [H, W, C] to [height, width, C] by nearest or bilinear sampling (Keras Resizing, and
// UpSampling2D, which the core writes as this op), on oneDNN's resampling (forward and backward).
// oneDNN's resampling samples output pixel o of an axis at input coordinate (o + 0.5) * in / out - 0.5 (half-pixel
// centres; linear clamps the taps to the image, nearest rounds to the closest pixel): what tf.image.resize does
// with half_pixel_centers, the Keras default, and what UpSampling2D's pixel repetition is for whole factors.
#include "../layout.hpp"
#include "layer_skeletons.hpp"

namespace onednn {
namespace {

class Resize : public ElementwiseLayer {
 public:
  Resize(const NodeSpec& node, LayerBuilder& b) {
    if (b.input_count() != 1) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "resize takes one input");
    b.require_rank(3, "an image [H, W, C]");
    const Shape& in = b.input(0).shape;
    const int64_t C = in[2], N = b.batch(), OH = node.attr_int("height"), OW = node.attr_int("width");
    if (OH < 1 || OW < 1) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "height and width must be >= 1");
    const std::string how = node.attr_string("interpolation", "bilinear");
    if (how != "nearest" && how != "bilinear")
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "interpolation must be \"nearest\" or \"bilinear\", got '" + how + "'");
    const auto algorithm =
        how == "nearest" ? dnnl::algorithm::resampling_nearest : dnnl::algorithm::resampling_linear;
    b.check_shape({OH, OW, C});
    out_ = &b.output();

    const md src = b.compute_desc(b.input(0));  // resampling takes whatever layout its producer chose
    const md dst_any({N, C, OH, OW}, b.compute_type(), tag::any);
    const dnnl::resampling_forward::primitive_desc pd({b.forward_kind(), algorithm, src, dst_any}, b.attr(),
                                                      b.engine());
    fwd_ = dnnl::resampling_forward(pd);
    in_ = Edge(b, b.input(0), src);
    b.define_output(pd.dst_desc());
    fwd_args_ = {{DNNL_ARG_SRC, in_.mem()}, {DNNL_ARG_DST, out_->mem}};
    b.use_scratchpad(pd, fwd_args_);
    if (!b.backward() || !in_.needs_grad()) return;

    const dnnl::resampling_backward::primitive_desc bpd({algorithm, src, pd.dst_desc()}, b.attr(), b.engine(), pd);
    bwd_ = dnnl::resampling_backward(bpd);
    bwd_args_ = {};
    b.use_scratchpad(bpd, bwd_args_);
  }
};

}  // namespace

std::unique_ptr<Layer> make_resize(const NodeSpec& node, LayerBuilder& builder) {
  return std::make_unique<Resize>(node, builder);
}

}  // namespace onednn
