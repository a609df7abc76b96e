// The manifest's `export` section, typed: quantize the trained model with calibration and write it in a
// deployable format (a quantizer component and an exporter component, e.g. `int8` and `tflite` from the tflite
// plugin). The core owns only the words below; everything else in the section is the quantizer's configuration,
// which the quantizer judges (docs/quantized-graph.md).
#pragma once

#include "ramjet/plugin/components.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>

namespace ramjet::core {

struct ExportConfig {
  ComponentSpec quantizer{{{"type", "int8"}}, "/export"};  // config: /export less the core's words
  ComponentSpec exporter{{{"type", "tflite"}}, "/export/format"};
  std::filesystem::path path;                  // resolved against the manifest's folder
  int64_t calibration_batches = 10;
  std::string calibration_data = "train";      // which input pipeline feeds calibration: train or eval
  bool evaluate = true;                        // measure the quantized model's accuracy with the backend
};

}  // namespace ramjet::core
