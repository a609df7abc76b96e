// quantizer "int8": post-training quantization per docs/quantized-graph.md. observe() collects calibration
// statistics of every tapped tensor; quantize() rewrites the graph, picks every tensor's int8 parameters and
// quantizes the weights, returning the qgraph JSON and its parameters.
//
// Config: the pipeline manifest's /export object less the core's own keys (quantizer, format, path, evaluate,
// calibration/batches, calibration/data), every field optional — see fields() and docs/quantized-graph.md:
//   {"mode": "full_integer" | "dynamic_range", "input_type": ..., "output_type": ...,
//    "calibration": {"method": "minmax" | "percentile" | "mse", "percentile": 99.99}}
// input_type and output_type ("int8" | "uint8" | "float32") are recorded for the exporter; dynamic_range keeps
// float32 inputs and outputs.
#pragma once

#include "calibration.hpp"
#include "ranges.hpp"

#include <ramjet/sdk.hpp>

#include <string>
#include <string_view>

namespace tflite_plugin {

class Int8Quantizer {
 public:
  static ramjet::Fields fields();
  static void check(const nlohmann::json& config, ramjet::Problems& problems);  // rules across fields

  explicit Int8Quantizer(const ramjet::Config& config);
  void observe(std::string_view tensor, const DLTensor& value);
  nlohmann::json quantize(const nlohmann::json& graph, ramjet::Example& params, ramjet::Example& out_params);

 private:
  bool full_integer_;
  RangeMethod method_;
  double percentile_;
  std::string input_type_, output_type_;
  Calibration calibration_;
};

}  // namespace tflite_plugin
