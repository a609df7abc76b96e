// The layers that act element by element or only move values: activation, dropout, add, flatten and reshape.
#include "../elementwise.hpp"
#include "../layer.hpp"
#include "activation.hpp"
#include "cuda_check.hpp"
#include "dropout.hpp"
#include "own_activation.hpp"

namespace cuda_plugin {
namespace {

void copy(void* dst, const void* src, size_t bytes, Device& device, const char* what) {
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, device.stream()), "cudaMemcpyAsync", what);
}

// activation: one of activation.hpp's, with Keras's attributes (elu's alpha, leaky_relu's negative_slope).
class ActivationLayer : public OneInputLayer {
 public:
  ActivationLayer(const NodeSpec& node, Build& b)
      : OneInputLayer(b) {
    b.check_output(node, b.only_input(node, 0, "one tensor"));
    const ActivationChoice choice = activation_of(node);
    kind_ = choice.kind;
    alpha_ = choice.alpha;
  }
  void forward(const Pass&) override {
    activation_forward(kind_, alpha_, in_.data.get(), out_.data.get(), out_.elements, dtype_, device_.stream());
  }
  void backward(const Pass&) override {
    if (!in_.wants_grad) return;
    activation_backward(kind_, alpha_, in_.data.get(), out_.grad.get(),
                        gradient_slot(in_, device_, dtype_, "activation input gradient"), out_.elements, dtype_,
                        device_.stream());
    gradient_written(in_, device_, dtype_);
  }

 private:
  Activation kind_ = Activation::linear;
  float alpha_ = 0.0f;
};

// dropout: identity outside training. The mask is a function of (the step's seed, this node, the element), so the
// backward recomputes it.
class Dropout : public OneInputLayer {
 public:
  Dropout(const NodeSpec& node, Build& b)
      : OneInputLayer(b), salt_(0x9E3779B97F4A7C15ull * (node.index + 1)) {
    b.check_output(node, b.only_input(node, 0, "one tensor"));
    rate_ = static_cast<float>(node.attr_number("rate", 0.0));
    if (!(rate_ >= 0.0f && rate_ < 1.0f)) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "rate must be in [0, 1)");
  }
  void forward(const Pass& pass) override {
    masked_ = pass.training && rate_ > 0.0f;
    seed_ = pass.seed ^ salt_;
    if (masked_)
      dropout_forward(rate_, seed_, in_.data.get(), out_.data.get(), out_.elements, dtype_, device_.stream());
    else
      copy(out_.data.get(), in_.data.get(), out_.data.bytes(), device_, "dropout (identity)");
  }
  void backward(const Pass&) override {
    if (!in_.wants_grad) return;
    void* dx = gradient_slot(in_, device_, dtype_, "dropout input gradient");
    if (masked_) dropout_backward(rate_, seed_, out_.grad.get(), dx, out_.elements, dtype_, device_.stream());
    else copy(dx, out_.grad.get(), out_.grad.bytes(), device_, "dropout gradient (identity)");
    gradient_written(in_, device_, dtype_);
  }

 private:
  uint64_t salt_;
  float rate_ = 0.0f;
  bool masked_ = false;
  uint64_t seed_ = 0;
};

// add: the sum of inputs of one shape (a residual connection); each input's gradient is the output's.
class Add : public Layer {
 public:
  Add(const NodeSpec& node, Build& b) : device_(b.device), dtype_(b.dtype), inputs_(b.inputs), out_(b.output) {
    if (inputs_.size() < 2) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "add takes two or more inputs");
    for (const Value* v : inputs_)
      if (v->shape != inputs_[0]->shape)
        node.fail(RAMJET_ERR_INVALID_ARGUMENT, "the cuda backend adds inputs of one shape; '" + v->name + "' is " +
                                                   ramjet::ir::shape_string(v->shape) + ", '" + inputs_[0]->name +
                                                   "' " + ramjet::ir::shape_string(inputs_[0]->shape));
    b.check_output(node, inputs_[0]->shape);
  }
  void forward(const Pass&) override {
    add(inputs_[0]->data.get(), inputs_[1]->data.get(), out_.data.get(), out_.elements, dtype_, device_.stream());
    for (size_t i = 2; i < inputs_.size(); ++i)
      add_into(out_.data.get(), inputs_[i]->data.get(), out_.elements, dtype_, device_.stream());
  }
  void backward(const Pass&) override {
    for (Value* v : inputs_) {
      if (!v->wants_grad) continue;
      copy(gradient_slot(*v, device_, dtype_, "add input gradient"), out_.grad.get(), out_.grad.bytes(), device_,
           "add gradient");
      gradient_written(*v, device_, dtype_);
    }
  }

 private:
  Device& device_;
  cudaDataType_t dtype_;
  std::vector<Value*> inputs_;
  Value& out_;
};

// flatten and reshape: the same elements under another per-example shape (a copy: values keep their own buffers).
class Reshape : public OneInputLayer {
 public:
  Reshape(const NodeSpec& node, Build& b) : OneInputLayer(b) {
    b.check_output(node, node.reshape_target(b.only_input(node, 0, "one tensor")));
  }
  void forward(const Pass&) override { copy(out_.data.get(), in_.data.get(), out_.data.bytes(), device_, "reshape"); }
  void backward(const Pass&) override {
    if (!in_.wants_grad) return;
    copy(gradient_slot(in_, device_, dtype_, "reshape input gradient"), out_.grad.get(), out_.grad.bytes(), device_,
         "reshape gradient");
    gradient_written(in_, device_, dtype_);
  }
};

}  // namespace

std::unique_ptr<Layer> make_activation(const NodeSpec& n, Build& b) { return std::make_unique<ActivationLayer>(n, b); }
std::unique_ptr<Layer> make_dropout(const NodeSpec& n, Build& b) { return std::make_unique<Dropout>(n, b); }
std::unique_ptr<Layer> make_add(const NodeSpec& n, Build& b) { return std::make_unique<Add>(n, b); }
std::unique_ptr<Layer> make_reshape(const NodeSpec& n, Build& b) { return std::make_unique<Reshape>(n, b); }

}  // namespace cuda_plugin
