// Builds a TensorFlow Lite model (schema v3, identifier "TFL3") from a full-integer qgraph and its parameters
// (docs/quantized-graph.md): int8 activations, per-channel Conv2D/DepthwiseConv2D weights, per-tensor
// FullyConnected weights, int32 biases, QUANTIZE/DEQUANTIZE at the edges for uint8/float32 interfaces, and the
// qgraph itself in the metadata entry "ramjet_qgraph".
#pragma once

#include <ramjet/sdk.hpp>

#include <nlohmann/json.hpp>

#include <string>

namespace tflite_plugin {

// The model's bytes. Throws naming the node when the graph has something TFLite cannot express.
std::string build_tflite_model(const nlohmann::json& qgraph, ramjet::Example& params);

}  // namespace tflite_plugin
