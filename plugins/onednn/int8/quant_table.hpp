// The qgraph's "quantization" object (docs/quantized-graph.md): scale and zero point of every tensor, read once at
// compile time. Activations are int8 in the contract; the int8 program stores them as u8 (q_u8 = q_s8 + 128), so
// an activation's zero point is kept in both domains.
#pragma once

#include "../common.hpp"

#include <map>

namespace onednn::int8 {

struct ActivationQuant {
  float scale = 1.0f;
  int32_t zero_point = 0;  // int8 domain, as the contract writes it
  int32_t zp_u8() const { return zero_point + 128; }
  bool same_as(const ActivationQuant& o) const { return scale == o.scale && zero_point == o.zero_point; }
};

struct WeightQuant {
  std::vector<float> scale;  // one (per tensor) or one per output channel
  int axis = -1;             // the per-channel axis in the IR layout; -1 per tensor
  bool symmetric = true;     // every zero point 0 (checked when a layer reads it as a weight)
};

class QuantTable {
 public:
  // Reads and checks the `quantization` object of a qgraph.
  explicit QuantTable(const nlohmann::json& qgraph);

  const ActivationQuant& activation(const std::string& tensor) const;
  const WeightQuant& weight(const std::string& param) const;

 private:
  std::map<std::string, ActivationQuant> activations_;
  std::map<std::string, WeightQuant> weights_;
};

}  // namespace onednn::int8
