#include "precision_policy.hpp"

#include <array>

namespace onednn {
namespace {

constexpr DLDataType kFloat32{kDLFloat, 32, 1};
constexpr DLDataType kBfloat16{kDLBfloat, 16, 1};

// Ops whose arithmetic stays float32: normalisations and exponentials over a whole row, where bf16's 8-bit
// mantissa costs accuracy and saves little time.
constexpr std::array<std::string_view, 5> kFloat32Ops{"softmax", "batch_norm", "sparse_softmax_cross_entropy", "mse",
                                                      "l1"};

}  // namespace

bool keeps_float32(const std::string& op, const nlohmann::json& attrs) {
  for (std::string_view f : kFloat32Ops)
    if (op == f) return true;
  if (op.ends_with("_loss") || op.ends_with("_cross_entropy")) return true;
  // Keras's Activation("softmax") is a softmax.
  return op == "activation" && attrs.is_object() && attrs.value("activation", std::string()) == "softmax";
}

ramjet_layer_dtypes MixedBfloat16Policy::layer_dtypes(const nlohmann::json& layer) const {
  if (!layer.is_object())
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "mixed_bfloat16 layer_dtypes: the layer must be a JSON object");
  const char* key = layer.contains("op") ? "op" : "type";
  const auto it = layer.find(key);
  if (it == layer.end() || !it->is_string())
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "mixed_bfloat16 layer_dtypes: the layer " +
                                                         layer.value("name", std::string("(unnamed)")) +
                                                         " has no string 'op' (or 'type')");
  ramjet_layer_dtypes d{};
  d.compute = keeps_float32(it->get<std::string>(), layer.contains("attrs") ? layer["attrs"] : layer) ? kFloat32 : kBfloat16;
  d.variable = kFloat32;  // master weights, gradients and optimizer slots
  return d;
}

void MixedBfloat16Policy::restore_state(std::string_view state) {
  if (!state.empty())
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT,
                        "mixed_bfloat16 restore_state: this policy keeps no state, but the checkpoint holds " +
                            std::to_string(state.size()) + " bytes of another policy's (a loss scaler's?)");
}

}  // namespace onednn
