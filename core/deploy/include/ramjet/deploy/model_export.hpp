// Post-training quantization and export (the plan's export section): calibrate activation ranges through the
// backend's taps, quantize with the quantizer component, write the file with the exporter component, and score
// the quantized model with the backend's int8 inference.
#pragma once

#include "ramjet/plan/plan.hpp"
#include "ramjet/plugin/backend.hpp"
#include "ramjet/plugin/model_components.hpp"
#include "ramjet/plugin/plugin_registry.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace ramjet::core {

using QuantizedModel = Quantizer::Result;

// Calibrates on the pipeline export.calibration.data names with the float `program` (compiled from the plan's
// graph, holding `parameters`) and quantizes. Leaves the program's taps cleared.
QuantizedModel quantize_model(const Plan& plan, PluginRegistry& registry, Program& program, Example& parameters,
                              const ExportConfig& config);

// Whether the backend can run the quantized graph as integer inference (a full-integer model; a weights-only
// one is for other runtimes), per the graph's own "mode" field (docs/quantized-graph.md).
bool runs_as_integer(const QuantizedModel& model);

// The quantized program, with its parameters set, and where it runs.
struct QuantizedProgram {
  std::unique_ptr<Backend> own_backend;  // set when it is not the training backend; outlives `program`
  std::unique_ptr<Program> program;
  std::string backend;                   // the backend's name, for reports
};

// Compiles the quantized graph on `trained_on` (the plan's training backend) when that runs integer inference;
// otherwise on the first other backend of the plugin set that does, made with its defaults and `threads`: a GPU
// backend has no integer kernels, and an int8 file is for CPUs. Throws the training backend's refusal
// (InvalidInput) when no backend compiles it.
QuantizedProgram compile_quantized(const Plan& plan, PluginRegistry& registry, const Backend& trained_on,
                                   QuantizedModel& model, int64_t batch, int64_t threads = 0);

// Creates the folder the export will write into, so a bad path fails before training rather than after.
// Throws InvalidInput naming /export/path.
void prepare_export_destination(const Plan& plan);

// The whole export section for trained `parameters`; returns the report's "export" object. When
// `int8_predictions` is set it receives the backend's int8 top-1 class for every eval sample (tests compare it
// with other readers of the exported file).
nlohmann::json export_trained_model(const Plan& plan, PluginRegistry& registry, Example& parameters,
                                    std::ostream* progress, std::vector<int32_t>* int8_predictions = nullptr);

}  // namespace ramjet::core
