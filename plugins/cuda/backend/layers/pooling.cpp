// max_pool, avg_pool (window, strides, symmetric padding) and their global forms (the whole image to [C]), on cuDNN
// (pooling.hpp) with Keras's rules.
#include "../layer.hpp"
#include "pooling.hpp"

namespace cuda_plugin {
namespace {

class Pooling : public OneInputLayer {
 public:
  Pooling(const NodeSpec& node, Build& b, PoolingProducts::Kind kind, bool global)
      : OneInputLayer(b) {
    if (global && b.inputs.size() == 1 && b.inputs[0]->shape.size() == 2)
      node.fail(RAMJET_ERR_UNSUPPORTED, "the cuda backend pools images [H, W, C] only, not sequences [T, C]");
    const ramjet::ir::PoolGeometry g =
        ramjet::ir::pool_geometry(node, b.only_input(node, 3, "an image [H, W, C]"), global);
    const auto &k = g.kernel, &s = g.strides, &pad = g.padding;
    if (pad[0] != pad[1] || pad[2] != pad[3])
      node.fail(RAMJET_ERR_UNSUPPORTED, "cuDNN pads both sides alike; this padding [top, bottom, left, right] is uneven");
    const int64_t H = g.H, W = g.W, C = g.C;
    b.check_output(node, global ? Shape{C} : Shape{g.OH, g.OW, C});
    auto i = [](int64_t v) { return static_cast<int>(v); };
    const PoolingShape shape{i(b.batch), i(H), i(W), i(C), i(k[0]), i(k[1]), i(s[0]), i(s[1]), i(pad[0]), i(pad[2])};
    products_ = std::make_unique<PoolingProducts>(device_.dnn(), node.name, kind, shape,
                                                  dtype_ == CUDA_R_16F ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT);
  }

  void forward(const Pass&) override { products_->forward(in_.data.get(), out_.data.get()); }

  void backward(const Pass&) override {
    if (!in_.wants_grad) return;
    products_->backward(in_.data.get(), out_.data.get(), out_.grad.get(),
                        gradient_slot(in_, device_, dtype_, "pooling input gradient"));
    gradient_written(in_, device_, dtype_);
  }

 private:
  std::unique_ptr<PoolingProducts> products_;
};

}  // namespace

std::unique_ptr<Layer> make_max_pool(const NodeSpec& n, Build& b) {
  return std::make_unique<Pooling>(n, b, PoolingProducts::Kind::max, false);
}
std::unique_ptr<Layer> make_avg_pool(const NodeSpec& n, Build& b) {
  return std::make_unique<Pooling>(n, b, PoolingProducts::Kind::average, false);
}
std::unique_ptr<Layer> make_global_max_pool(const NodeSpec& n, Build& b) {
  return std::make_unique<Pooling>(n, b, PoolingProducts::Kind::max, true);
}
std::unique_ptr<Layer> make_global_avg_pool(const NodeSpec& n, Build& b) {
  return std::make_unique<Pooling>(n, b, PoolingProducts::Kind::average, true);
}

}  // namespace cuda_plugin
