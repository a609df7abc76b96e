// Post-training quantization and export (the manifest's `export` section): calibrate activation ranges through
// the backend's taps, quantize with the quantizer component, write the file with the exporter component, and
// score the quantized model with the backend's int8 inference.
#pragma once

#include "ramjet/core/backend.hpp"
#include "ramjet/core/export_config.hpp"
#include "ramjet/core/model_components.hpp"
#include "ramjet/core/plugin_registry.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <iosfwd>
#include <vector>

namespace ramjet::core {

// Calibrates on /data/<calibration_data> with the float `program` (compiled from `graph`, holding the trained
// parameters) and quantizes. Leaves the program's taps cleared.
Quantizer::Result quantize_model(const PipelineManifest& manifest, PluginRegistry& registry, Program& program,
                                 const nlohmann::json& graph, Example& parameters, const ExportConfig& config);

// Creates the folder the export will write into, so a bad path fails before training rather than after.
// Throws InvalidInput naming /export/path.
void prepare_export_destination(const PipelineManifest& manifest);

// The whole `export` section for trained `parameters`; returns the report's "export" object. When
// `int8_predictions` is set it receives the backend's int8 top-1 class for every eval sample (tests compare it
// with other readers of the exported file).
nlohmann::json export_trained_model(const PipelineManifest& manifest, PluginRegistry& registry, Example& parameters,
                                    std::ostream* progress, std::vector<int32_t>* int8_predictions = nullptr);

}  // namespace ramjet::core
