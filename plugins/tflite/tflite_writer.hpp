// Builds a TensorFlow Lite model (schema v3, identifier "TFL3") from a qgraph and its parameters
// (docs/quantized-graph.md), with the qgraph itself in the metadata entry "ramjet_qgraph".
// full_integer: int8 activations, per-channel Conv2D/DepthwiseConv2D/TransposeConv weights, per-tensor
// FullyConnected weights, int32 biases, QUANTIZE/DEQUANTIZE at the edges for uint8/float32 interfaces.
// dynamic_range: float32 activations, biases and interface; only the conv/dense kernels are int8 constants (same
// axes as above), run by LiteRT's hybrid kernels, as TensorFlow's converter writes Optimize.DEFAULT without a
// representative dataset.
#pragma once

#include <ramjet/sdk.hpp>

#include <nlohmann/json.hpp>

#include <string>

namespace tflite_plugin {

// The model's bytes. Throws naming the node when the graph has something TFLite cannot express.
std::string build_tflite_model(const nlohmann::json& qgraph, ramjet::Example& params);

}  // namespace tflite_plugin
