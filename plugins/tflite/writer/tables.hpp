// The FlatBuffers tables a TFLite model is made of, appended to in the order the writer emits them: buffers,
// tensors with their quantization parameters, operators and the operator codes they share. assembly.hpp turns
// them into the finished model.
#pragma once

#include "qgraph.hpp"

#include <schema_generated.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tflite_plugin::writer {

namespace tfl = ::tflite;
using flatbuffers::Offset;

class Tables {
 public:
  Tables();

  // For operator options, which the caller builds before add_op.
  flatbuffers::FlatBufferBuilder& builder() { return fbb_; }

  // A constant's bytes; the index its tensor refers to.
  uint32_t add_buffer(const void* data, size_t size);

  // `zp_shift` moves every zero point (128 for a uint8 view of int8 parameters).
  Offset<tfl::QuantizationParameters> quantization(const TensorQuant& q, int32_t dimension, int64_t zp_shift = 0);

  // `dynamic_batch`: -1 for the first dimension in the shape signature, so LiteRT may resize it.
  int32_t add_tensor(const std::string& name, const Shape& shape, tfl::TensorType type, uint32_t buffer,
                     Offset<tfl::QuantizationParameters> quant, bool dynamic_batch);

  // A 1-D int32 constant tensor (a RESHAPE's shape).
  int32_t add_int32_constant(const std::string& name, const std::vector<int32_t>& values);

  void add_op(tfl::BuiltinOperator op, int32_t version, const std::vector<int32_t>& inputs,
              const std::vector<int32_t>& outputs, tfl::BuiltinOptions options_type = tfl::BuiltinOptions_NONE,
              Offset<void> options = 0);

  const std::vector<Offset<tfl::Buffer>>& buffers() const { return buffers_; }
  const std::vector<Offset<tfl::Tensor>>& tensors() const { return tensors_; }
  const std::vector<Offset<tfl::Operator>>& operators() const { return operators_; }
  // (operator, version) in operator-code index order.
  const std::vector<std::pair<tfl::BuiltinOperator, int32_t>>& opcodes() const { return opcodes_; }

 private:
  uint32_t opcode(tfl::BuiltinOperator op, int32_t version);

  flatbuffers::FlatBufferBuilder fbb_{1 << 16};
  std::vector<Offset<tfl::Buffer>> buffers_;
  std::vector<Offset<tfl::Tensor>> tensors_;
  std::vector<Offset<tfl::Operator>> operators_;
  std::vector<std::pair<tfl::BuiltinOperator, int32_t>> opcodes_;
};

}  // namespace tflite_plugin::writer
