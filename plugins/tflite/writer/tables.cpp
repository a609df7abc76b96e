#include "writer/tables.hpp"

namespace tflite_plugin::writer {

Tables::Tables() {
  buffers_.push_back(tfl::CreateBuffer(fbb_));  // buffer 0: the empty sentinel that non-constant tensors name
}

uint32_t Tables::add_buffer(const void* data, size_t size) {
  fbb_.ForceVectorAlignment(size, sizeof(uint8_t), 16);  // the schema's force_align: 16 on Buffer.data
  auto bytes = fbb_.CreateVector(static_cast<const uint8_t*>(data), size);
  buffers_.push_back(tfl::CreateBuffer(fbb_, bytes));
  return static_cast<uint32_t>(buffers_.size() - 1);
}

Offset<tfl::QuantizationParameters> Tables::quantization(const TensorQuant& q, int32_t dimension, int64_t zp_shift) {
  std::vector<int64_t> zero_points = q.zero_point;
  for (auto& z : zero_points) z += zp_shift;
  return tfl::CreateQuantizationParametersDirect(fbb_, nullptr, nullptr, &q.scale, &zero_points,
                                                 tfl::QuantizationDetails_NONE, 0, dimension);
}

int32_t Tables::add_tensor(const std::string& name, const Shape& shape, tfl::TensorType type, uint32_t buffer,
                           Offset<tfl::QuantizationParameters> quant, bool dynamic_batch) {
  const std::vector<int32_t> dims(shape.begin(), shape.end());
  std::vector<int32_t> signature = dims;
  if (dynamic_batch) signature[0] = -1;
  tensors_.push_back(tfl::CreateTensorDirect(fbb_, &dims, type, buffer, name.c_str(), quant, false, 0,
                                             dynamic_batch ? &signature : nullptr, true));
  return static_cast<int32_t>(tensors_.size() - 1);
}

int32_t Tables::add_int32_constant(const std::string& name, const std::vector<int32_t>& values) {
  const uint32_t buffer = add_buffer(values.data(), values.size() * sizeof(int32_t));
  return add_tensor(name, {static_cast<int64_t>(values.size())}, tfl::TensorType_INT32, buffer, 0, false);
}

// One operator code per (operator, version), shared by every operator that uses it.
uint32_t Tables::opcode(tfl::BuiltinOperator op, int32_t version) {
  for (size_t i = 0; i < opcodes_.size(); ++i)
    if (opcodes_[i].first == op && opcodes_[i].second == version) return static_cast<uint32_t>(i);
  opcodes_.emplace_back(op, version);
  return static_cast<uint32_t>(opcodes_.size() - 1);
}

void Tables::add_op(tfl::BuiltinOperator op, int32_t version, const std::vector<int32_t>& inputs,
                    const std::vector<int32_t>& outputs, tfl::BuiltinOptions options_type, Offset<void> options) {
  const uint32_t code = opcode(op, version);
  auto in = fbb_.CreateVector(inputs);
  auto out = fbb_.CreateVector(outputs);
  operators_.push_back(tfl::CreateOperator(fbb_, code, in, out, options_type, options));
}

}  // namespace tflite_plugin::writer
