// compile() options: the batch the program is built for, the precision, and the optimizer.
#pragma once

#include "common.hpp"

namespace onednn {

// float32, or mixed_bfloat16: layers build their primitives with compute_type() (bf16), while parameters,
// gradients, optimizer slots, the loss, softmax, batch-norm statistics and the tensors exchanged with the host
// stay float32 (reorders convert at the boundaries).
enum class Precision { float32, mixed_bfloat16 };

struct OptimizerSpec {
  enum class Type { sgd, adam, adamw };
  Type type = Type::adam;
  double momentum = 0.0;  // sgd
  bool nesterov = false;  // sgd
  double beta_1 = 0.9, beta_2 = 0.999, epsilon = 1e-7;  // adam, adamw
  double weight_decay = 0.0;  // sgd/adam: L2 added to the gradient; adamw: decoupled
};

struct CompileOptions {
  int64_t batch = 32;
  Precision precision = Precision::float32;
  OptimizerSpec optimizer;

  dt compute_type() const { return precision == Precision::mixed_bfloat16 ? dt::bf16 : dt::f32; }
};

CompileOptions parse_options(const nlohmann::json& options);

}  // namespace onednn
