#include "writer/model_writer.hpp"

#include <algorithm>

namespace tflite_plugin::writer {

// int32 in full integer; float32 in dynamic range, where a node without a bias gets `<node>/bias` of zeros (the
// contract's rule for full integer too, and the hybrid kernels' usual three inputs).
int32_t ModelWriter::bias_tensor(const json& node, int64_t channels) {
  if (float_activations_) return float_bias_tensor(node, channels);
  const std::string name = node.at("params").at("bias");
  const TensorQuant q = quant_of(name);
  if (q.dtype != "int32") fail(describe(node) + ": bias '" + name + "' must be int32");
  const int32_t* data = param_data<int32_t>(name, node, static_cast<size_t>(channels));
  const uint32_t buffer = tables_.add_buffer(data, static_cast<size_t>(channels) * sizeof(int32_t));
  return tables_.add_tensor(name, {channels}, tfl::TensorType_INT32, buffer, tables_.quantization(q, 0), false);
}

int32_t ModelWriter::float_bias_tensor(const json& node, int64_t channels) {
  std::vector<float> values(static_cast<size_t>(channels), 0.0f);
  std::string name = node.at("name").get<std::string>() + "/bias";
  if (node.contains("params") && node.at("params").contains("bias")) {
    name = node.at("params").at("bias");
    const float* data = param_data<float>(name, node, values.size());
    std::copy(data, data + channels, values.begin());
  }
  const uint32_t buffer = tables_.add_buffer(values.data(), values.size() * sizeof(float));
  return tables_.add_tensor(name, {channels}, tfl::TensorType_FLOAT32, buffer, 0, false);
}

}  // namespace tflite_plugin::writer
