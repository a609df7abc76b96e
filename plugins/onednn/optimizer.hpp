// The optimizers, on the Keras-layout parameter and gradient buffers, following Keras's update rules:
//   sgd:   v = momentum * v - lr * g;  p += v  (nesterov: p += momentum * v - lr * g);  plain p -= lr * g
//   adam:  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;  p -= lr sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps)
//   adamw: adam after the decoupled decay p -= lr * weight_decay * p
// sgd and adam take weight_decay as L2 (g += weight_decay * p). g is the stored gradient times gradient_scale.
// Slots are named "<param>/momentum" (sgd with momentum) or "<param>/m" and "<param>/v" (adam, adamw).
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
  struct Entry {  // a trainable parameter and its slots (null when the optimizer keeps none)
    Param* param;
    float* first;
    float* second;
  };
  OptimizerSpec spec_;
  std::vector<Slot> slots_;  // per trainable parameter, in the store's order: 0, 1 or 2 slots each
  std::vector<Entry> entries_;
};

}  // namespace onednn
