// The optimizers, on the Keras-layout parameter and gradient buffers, following Keras's update rules:
//   sgd:     v = momentum * v - lr * g;  p += v  (nesterov: p += momentum * v - lr * g);  plain p -= lr * g
//   adam:    m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
//            p -= lr sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps)
//   adamw:   adam after the decoupled decay p -= lr * weight_decay * p
//   rmsprop: v = rho v + (1 - rho) g^2;  d = v + eps  (centered: a = rho a + (1 - rho) g;  d = v - a^2 + eps);
//            inc = lr g / sqrt(d);  p -= inc  (momentum > 0: mom = momentum * mom + inc;  p -= mom)
// sgd, adam and rmsprop take weight_decay as L2 (g += weight_decay * p). g is the stored gradient times
// gradient_scale; lr is ramjet_update_args.learning_rate of this step.
// adamw decays only the parameters of rank >= 2 (kernels, embeddings), never biases or normalization scales and
// offsets (rank 1), as nanoGPT's and Hugging Face's AdamW recipes do; `decay_all` decays every trainable parameter
// (Keras's and PyTorch's plain AdamW).
// Slots are named "<param>/momentum" (sgd with momentum), "<param>/m" and "<param>/v" (adam, adamw), and, with
// Keras's names, "<param>/velocity" (rmsprop's mean square, always), "<param>/momentum" (rmsprop with momentum > 0)
// and "<param>/average_gradient" (centered rmsprop's mean gradient). They are allocated at construction: update()
// allocates nothing.
// Parameters that are not trainable (batch_norm's moving statistics) are left alone.
#pragma once

#include "options.hpp"
#include "parameters.hpp"

namespace onednn {

class Optimizer {
 public:
  struct Slot {
    std::string name;
    Param* param;
    std::vector<float> data;
  };

  Optimizer(const OptimizerSpec& spec, ParameterStore& params);
  void update(const ramjet_update_args& args);
  std::vector<Slot>& slots() { return slots_; }
  Slot* find(const std::string& name);

 private:
  // A trainable parameter and its slots, in the order the optimizer names them (null when it keeps fewer).
  struct Entry {
    Param* param;
    float* slot[3];
    bool decay;  // adamw: this parameter is decayed
  };
  OptimizerSpec spec_;
  std::vector<Slot> slots_;  // per trainable parameter, in the store's order: 0 to 3 slots each
  std::vector<Entry> entries_;
};

}  // namespace onednn
