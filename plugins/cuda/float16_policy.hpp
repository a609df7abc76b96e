// The "mixed_float16" precision_policy component: float16 compute over float32 master weights, with dynamic loss
// scaling (ramjet::DynamicLossScaler: float16's smallest normal is 2^-14, so small gradients need the loss scaled
// up). The whole-row reductions (softmax, the normalisations' statistics) and the losses stay float32, as in
// PyTorch's autocast lists and Keras's mixed-precision guide.
#pragma once

#include <ramjet/sdk.hpp>

#include <string>
#include <string_view>

namespace cuda_plugin {

class MixedFloat16Policy {
 public:
  static ramjet::Fields fields() { return ramjet::DynamicLossScaler::fields(); }
  explicit MixedFloat16Policy(const ramjet::Config& config) : scaler_(config) {}

  // `layer`: a graph-IR node ({"op": ...}) or a model-section layer ({"type": ...}).
  ramjet_layer_dtypes layer_dtypes(const nlohmann::json& layer) const;
  float loss_scale() const { return scaler_.scale(); }
  bool update(bool found_nonfinite) { return scaler_.update(found_nonfinite); }
  std::string save_state() const { return scaler_.save_state(); }
  void restore_state(std::string_view state) { scaler_.restore_state(state); }

 private:
  ramjet::DynamicLossScaler scaler_;
};

}  // namespace cuda_plugin
