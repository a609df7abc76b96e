// The layers that act element by element or only move values: activation, dropout, add, multiply, subtract,
// softmax, flatten and reshape.
#include "../elementwise.hpp"
#include "../layer.hpp"
#include "../softmax.hpp"
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
      : OneInputLayer(b), salt_(0x9E3779B97F4A7C15ull * (node.index + 1)), step_seed_(b.step_seed) {
    b.check_output(node, b.only_input(node, 0, "one tensor"));
    rate_ = static_cast<float>(node.attr_number("rate", 0.0));
    if (!(rate_ >= 0.0f && rate_ < 1.0f)) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "rate must be in [0, 1)");
  }
  void forward(const Pass& pass) override {
    // The same in every forward of a plan that trains (Program makes those for training forwards alone), so a
    // replay that skips this line leaves backward reading the right value.
    masked_ = pass.training && rate_ > 0.0f;
    if (masked_)
      dropout_forward(rate_, {step_seed_, salt_}, in_.data.get(), out_.data.get(), out_.elements, dtype_,
                      device_.stream());
    else
      copy(out_.data.get(), in_.data.get(), out_.data.bytes(), device_, "dropout (identity)");
  }
  void backward(const Pass&) override {
    if (!in_.wants_grad) return;
    void* dx = gradient_slot(in_, device_, dtype_, "dropout input gradient");
    if (masked_)
      dropout_backward(rate_, {step_seed_, salt_}, out_.grad.get(), dx, out_.elements, dtype_, device_.stream());
    else copy(dx, out_.grad.get(), out_.grad.bytes(), device_, "dropout gradient (identity)");
    gradient_written(in_, device_, dtype_);
  }

 private:
  uint64_t salt_;
  const uint64_t* step_seed_;
  float rate_ = 0.0f;
  bool masked_ = false;
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

// multiply and subtract: two inputs of one shape, element by element (no broadcasting, as on the cpu backend).
// For a · b, d a = d out · b and d b = d out · a; for a − b, d a = d out and d b = − d out.
Value& pair_input(const NodeSpec& node, Build& b, size_t i) {
  if (b.inputs.size() != 2) node.fail(RAMJET_ERR_INVALID_ARGUMENT, node.op + " takes exactly two inputs");
  return *b.inputs[i];
}

class Pairwise : public Layer {
 public:
  Pairwise(const NodeSpec& node, Build& b, bool multiplies)
      : device_(b.device), dtype_(b.dtype), a_(pair_input(node, b, 0)), b_(pair_input(node, b, 1)), out_(b.output),
        multiplies_(multiplies) {
    if (a_.shape != b_.shape)
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "inputs '" + a_.name + "' " + ramjet::ir::shape_string(a_.shape) +
                                                 " and '" + b_.name + "' " + ramjet::ir::shape_string(b_.shape) +
                                                 " differ in shape (" + node.op + " does not broadcast)");
    b.check_output(node, a_.shape);
  }
  void forward(const Pass&) override {
    (multiplies_ ? multiply : subtract)(a_.data.get(), b_.data.get(), out_.data.get(), out_.elements, dtype_,
                                        device_.stream());
  }
  void backward(const Pass&) override {
    for (int side = 0; side < 2; ++side) {
      Value& v = side == 0 ? a_ : b_;
      if (!v.wants_grad) continue;
      void* dv = gradient_slot(v, device_, dtype_, "input gradient of " + out_.name);
      if (multiplies_)
        multiply(out_.grad.get(), (side == 0 ? b_ : a_).data.get(), dv, out_.elements, dtype_, device_.stream());
      else if (side == 0)
        copy(dv, out_.grad.get(), out_.grad.bytes(), device_, "subtract gradient");
      else
        subtract(out_.grad.get(), nullptr, dv, out_.elements, dtype_, device_.stream());
      gradient_written(v, device_, dtype_);
    }
  }

 private:
  Device& device_;
  cudaDataType_t dtype_;
  Value& a_;
  Value& b_;
  Value& out_;
  bool multiplies_;
};

// softmax over the last axis (softmax.hpp).
class Softmax : public OneInputLayer {
 public:
  Softmax(const NodeSpec& node, Build& b) : OneInputLayer(b) {
    const Shape& shape = b.only_input(node, 0, "an input of rank 1 or more");
    const int64_t axis = node.attr_int("axis", -1);
    if (axis != -1 && axis != static_cast<int64_t>(shape.size()) - 1)
      node.fail(RAMJET_ERR_UNSUPPORTED, "softmax over axis " + std::to_string(axis) + ": only the last axis is supported");
    b.check_output(node, shape);
    width_ = shape.back();
  }
  void forward(const Pass&) override {
    softmax_forward(in_.data.get(), out_.data.get(), out_.elements / width_, width_, dtype_, device_.stream());
  }
  void backward(const Pass&) override {
    if (!in_.wants_grad) return;
    softmax_backward(out_.data.get(), out_.grad.get(), gradient_slot(in_, device_, dtype_, "softmax input gradient"),
                     out_.elements / width_, width_, dtype_, device_.stream());
    gradient_written(in_, device_, dtype_);
  }

 private:
  int64_t width_ = 1;
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
std::unique_ptr<Layer> make_multiply(const NodeSpec& n, Build& b) { return std::make_unique<Pairwise>(n, b, true); }
std::unique_ptr<Layer> make_subtract(const NodeSpec& n, Build& b) { return std::make_unique<Pairwise>(n, b, false); }
std::unique_ptr<Layer> make_softmax(const NodeSpec& n, Build& b) { return std::make_unique<Softmax>(n, b); }

}  // namespace cuda_plugin
