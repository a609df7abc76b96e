#include "writer/assembly.hpp"

#include <algorithm>

namespace tflite_plugin::writer {

std::string assemble_model(Tables& tables, const std::vector<int32_t>& inputs, const std::vector<int32_t>& outputs,
                           const std::string& qgraph_text, const char* description) {
  flatbuffers::FlatBufferBuilder& fbb = tables.builder();
  const uint32_t metadata_buffer = tables.add_buffer(qgraph_text.data(), qgraph_text.size());
  std::vector<Offset<tfl::OperatorCode>> codes;
  for (const auto& [op, version] : tables.opcodes()) {
    // deprecated_builtin_code is an int8: codes past 127 go in builtin_code with the placeholder here.
    const auto deprecated = static_cast<int8_t>(std::min<int32_t>(op, tfl::BuiltinOperator_PLACEHOLDER_FOR_GREATER_OP_CODES));
    codes.push_back(tfl::CreateOperatorCode(fbb, deprecated, 0, version, op));
  }
  std::vector<Offset<tfl::SubGraph>> subgraphs{
      tfl::CreateSubGraphDirect(fbb, &tables.tensors(), &inputs, &outputs, &tables.operators(), "main")};
  std::vector<Offset<tfl::Metadata>> metadata{tfl::CreateMetadataDirect(fbb, "ramjet_qgraph", metadata_buffer)};
  const auto model = tfl::CreateModelDirect(fbb, 3, &codes, &subgraphs, description, &tables.buffers(), nullptr, &metadata);
  tfl::FinishModelBuffer(fbb, model);
  flatbuffers::Verifier verifier(fbb.GetBufferPointer(), fbb.GetSize());
  if (!tfl::VerifyModelBuffer(verifier))
    throw ramjet::Error(RAMJET_ERR_INTERNAL, "tflite exporter: the built model does not verify against the schema");
  return std::string(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize());
}

}  // namespace tflite_plugin::writer
