// The finished TFLite model: schema version 3, one subgraph "main", the qgraph in the metadata entry
// "ramjet_qgraph", verified against the schema before its bytes are returned.
#pragma once

#include "writer/tables.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace tflite_plugin::writer {

// Appends the metadata buffer and the model tables to `tables`; throws RAMJET_ERR_INTERNAL if the result does not verify.
std::string assemble_model(Tables& tables, const std::vector<int32_t>& inputs, const std::vector<int32_t>& outputs,
                           const std::string& qgraph_text, const char* description);

}  // namespace tflite_plugin::writer
