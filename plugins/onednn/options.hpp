// compile() options: the batch the program is built for, the precision, the optimizer, and the threads.
//
// The options are judged in one place (option_issues) that serves both `ramjet validate` (the backend's
// check_options slot) and compile(), so the two never disagree. What the core sends:
//   {"batch": N, "threads": T, "optimizer": {"type": "adam", ...},
//    "layer_dtypes": {"<node>": {"compute": "bfloat16", "variable": "float32"}, ...}}
// or the backend's own "precision" word instead of layer_dtypes ("float32", "mixed_bfloat16", or "int8" for a
// qgraph). Without either, everything is float32.
#pragma once

#include "common.hpp"

#include <optional>

namespace onednn {

struct Graph;

// float32, or mixed_bfloat16: layers build their primitives with compute_type() (bf16), while parameters,
// gradients, optimizer slots, the loss, softmax, batch-norm statistics and the tensors exchanged with the host
// stay float32 (reorders convert at the boundaries).
enum class Precision { float32, mixed_bfloat16 };

struct OptimizerSpec {
  enum class Type { sgd, adam, adamw, rmsprop };
  Type type = Type::adam;
  double momentum = 0.0;  // sgd, rmsprop
  bool nesterov = false;  // sgd
  double beta_1 = 0.9, beta_2 = 0.999;  // adam, adamw
  double epsilon = 1e-7;  // adam, adamw, rmsprop
  double rho = 0.9;       // rmsprop
  bool centered = false;  // rmsprop
  double weight_decay = 0.0;  // sgd/adam/rmsprop: L2 added to the gradient; adamw: decoupled
  bool decay_all = false;     // adamw: decay every trainable parameter, not only those of rank >= 2
};

struct CompileOptions {
  int64_t batch = 32;
  Precision precision = Precision::float32;
  OptimizerSpec optimizer;
  std::optional<int> threads;  // overrides the backend's configuration when given

  dt compute_type() const { return precision == Precision::mixed_bfloat16 ? dt::bf16 : dt::f32; }
};

// The fields of one optimizer ("sgd", "adam", "adamw" or "rmsprop"), defaults included: the one declaration the
// options check and the optimizer's construction share. learning_rate is accepted (and must be > 0), but the rate an
// update uses is always ramjet_update_args.learning_rate, after the host's schedules.
ramjet::Fields optimizer_fields(const std::string& type);

// One thing wrong with compile options: RAMJET_ERR_INVALID_ARGUMENT for malformed options, RAMJET_ERR_UNSUPPORTED
// for well-formed ones this backend cannot run (an optimizer type, a precision, float16 layers).
struct OptionIssue {
  ramjet_status status;
  ramjet::Problem problem;  // pointer relative to the options object
};

// Everything that can be judged without the graph, in document order.
std::vector<OptionIssue> option_issues(const nlohmann::json& options);

// The options compile() runs with. Throws ramjet::Error listing every issue (RAMJET_ERR_UNSUPPORTED when all are
// about what this backend cannot run, else RAMJET_ERR_INVALID_ARGUMENT), and UNSUPPORTED when layer_dtypes ask for
// a mix the backend cannot run on `graph` (needed when the options have layer_dtypes; the int8 path has none).
// Precision "int8" leaves `precision` float32: the int8 program reads only batch and threads.
CompileOptions parse_options(const nlohmann::json& options, const Graph* graph);

}  // namespace onednn
