// The "mixed_bfloat16" precision_policy component: what this backend does with precision "mixed_bfloat16", told
// to the trainer layer by layer. Compute layers run in bfloat16 over float32 master weights; softmax, batch_norm
// (its statistics, scale and shift) and losses stay float32. bf16 keeps float32's exponent range, so no loss
// scaling: the scale is 1 and no step is ever skipped.
#pragma once

#include <ramjet/sdk.hpp>

#include <string>
#include <string_view>

namespace onednn {

// Ops this backend keeps in float32 arithmetic whatever the precision: softmax (also as an activation), batch_norm's
// statistics, and the losses. `attrs` is the node's attribute object (or a model-section layer itself).
bool keeps_float32(const std::string& op, const nlohmann::json& attrs);

class MixedBfloat16Policy {
 public:
  static ramjet::Fields fields() { return {}; }  // nothing to configure: any key is unknown
  explicit MixedBfloat16Policy(const ramjet::Config& /*config*/) {}

  // `layer`: a graph-IR node ({"op": ...}) or a model-section layer ({"type": ...}); a loss ({"op":
  // "sparse_softmax_cross_entropy"}) is asked about the same way.
  ramjet_layer_dtypes layer_dtypes(const nlohmann::json& layer) const;
  float loss_scale() const { return 1.0f; }
  bool update(bool /*found_nonfinite*/) { return false; }  // the trainer skips nothing for this policy
  std::string save_state() const { return {}; }
  void restore_state(std::string_view state);
};

}  // namespace onednn
