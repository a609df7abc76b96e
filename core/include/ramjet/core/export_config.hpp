// The manifest's `export` section: quantize the trained model with calibration and write it in a deployable
// format (a quantizer component and an exporter component, e.g. `int8` and `tflite` from the tflite plugin).
#pragma once

#include "ramjet/core/pipeline_manifest.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>

namespace ramjet::core {

struct ExportConfig {
  std::string quantizer = "int8";      // quantizer component
  std::string mode = "full_integer";   // or dynamic_range (weights only)
  std::string format = "tflite";       // exporter component
  std::filesystem::path path;          // resolved against the manifest's folder
  std::string input_type = "int8";     // int8, uint8 or float32
  std::string output_type = "int8";
  int64_t calibration_batches = 10;
  std::string calibration_method = "minmax";  // minmax, percentile or mse
  double calibration_percentile = 99.99;
  std::string calibration_data = "train";     // which input pipeline feeds calibration: train or eval
  bool evaluate = true;                       // measure the int8 model's accuracy with the backend

  // The quantizer component's configuration (docs/quantized-graph.md).
  nlohmann::json quantizer_config() const;
};

// Reads /export. Throws ManifestError for the first problem.
ExportConfig read_export_config(const PipelineManifest& manifest);

}  // namespace ramjet::core
