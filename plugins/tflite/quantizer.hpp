// quantizer "int8": post-training quantization per docs/quantized-graph.md. observe() collects calibration
// statistics of every tapped tensor; quantize() rewrites the graph, picks every tensor's int8 parameters and
// quantizes the weights, returning the qgraph JSON and its parameters.
//
// Config: mode ("full_integer" | "dynamic_range"), method ("minmax" | "percentile" | "mse"), percentile (99.99),
// input_type and output_type ("int8" | "uint8" | "float32", recorded for the exporter).
#pragma once

#include "calibration.hpp"
#include "ranges.hpp"

#include <ramjet/sdk.hpp>

#include <string>
#include <string_view>

namespace tflite_plugin {

class Int8Quantizer {
 public:
  explicit Int8Quantizer(const ramjet::Config& config);
  void observe(std::string_view tensor, const DLTensor& value);
  nlohmann::json quantize(const nlohmann::json& graph, ramjet::Example& params, ramjet::Example& out_params);

 private:
  bool full_integer_ = true;
  RangeMethod method_ = RangeMethod::minmax;
  double percentile_ = 99.99;
  std::string input_type_ = "int8", output_type_ = "int8";
  Calibration calibration_;
};

}  // namespace tflite_plugin
