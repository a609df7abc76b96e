#include "float16_policy.hpp"

#include <array>

namespace cuda_plugin {
namespace {

constexpr DLDataType kFloat32{kDLFloat, 32, 1};
constexpr DLDataType kFloat16{kDLFloat, 16, 1};

// Reductions over a whole row or channel, where float16's 10-bit mantissa and 65504 ceiling cost accuracy (a sum
// of squares overflows long before its mean would).
constexpr std::array<std::string_view, 7> kFloat32Ops{"softmax", "batch_norm", "layer_norm", "rms_norm",
                                                      "sparse_softmax_cross_entropy", "mse", "l1"};

bool stays_float32(const std::string& op, const nlohmann::json& attrs) {
  for (std::string_view f : kFloat32Ops)
    if (op == f) return true;
  if (op.ends_with("_loss") || op.ends_with("_cross_entropy")) return true;
  return op == "activation" && attrs.is_object() && attrs.value("activation", std::string()) == "softmax";
}

}  // namespace

ramjet_layer_dtypes MixedFloat16Policy::layer_dtypes(const nlohmann::json& layer) const {
  const char* key = layer.is_object() && layer.contains("op") ? "op" : "type";
  if (!layer.is_object() || !layer.contains(key) || !layer[key].is_string())
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT,
                        "mixed_float16 layer_dtypes: expected a layer object with a string 'op' (or 'type'), got " +
                            layer.dump().substr(0, 200));
  ramjet_layer_dtypes d{};
  d.compute = stays_float32(layer[key].get<std::string>(), layer.contains("attrs") ? layer["attrs"] : layer)
                  ? kFloat32
                  : kFloat16;
  d.variable = kFloat32;  // master weights, gradients and optimizer slots
  return d;
}

}  // namespace cuda_plugin
