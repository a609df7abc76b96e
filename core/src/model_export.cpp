#include "ramjet/core/model_export.hpp"

#include "ramjet/core/failure.hpp"
#include "ramjet/core/graph.hpp"
#include "ramjet/core/input_pipeline.hpp"
#include "ramjet/core/log.hpp"
#include "ramjet/core/model_eval.hpp"

#include <chrono>
#include <cstdio>
#include <ostream>

namespace ramjet::core {
namespace {

// Every tensor a quantized graph needs parameters for: the graph inputs and every node's output.
std::vector<std::string> activation_names(const nlohmann::json& graph) {
  std::vector<std::string> names;
  for (const auto& input : graph.at("inputs")) names.push_back(input.at("name").get<std::string>());
  for (const auto& node : graph.at("nodes")) names.push_back(node.at("name").get<std::string>());
  return names;
}

int64_t float_bytes(const Example& parameters) {
  int64_t bytes = 0;
  for (const auto& p : parameters.entries) bytes += element_count(p.tensor->dl_tensor) * 4;
  return bytes;
}

}  // namespace

Quantizer::Result quantize_model(const PipelineManifest& original, PluginRegistry& registry, Program& program,
                                 const nlohmann::json& graph, Example& parameters, const ExportConfig& config) {
  CreateArgs args;
  args.config = config.quantizer_config();
  args.where = original.where("/export/quantizer");
  args.seed = original.doc.value("seed", uint64_t{0});
  Quantizer quantizer(registry.component(RAMJET_KIND_QUANTIZER, config.quantizer), args);

  // Calibration reads one pass of the chosen pipeline, as it is (TFLiteConverter's representative dataset).
  PipelineManifest manifest = original;
  const std::string pointer = "/data/" + config.calibration_data;
  if (!manifest.doc["data"].contains(config.calibration_data))
    throw InvalidInput(manifest.where(pointer) + ": calibration reads this pipeline, and the manifest has none");
  manifest.doc["data"][config.calibration_data]["epochs"] = 1;
  InputPipeline data(manifest, pointer, registry, args.seed);
  program.set_taps(activation_names(graph),
                   [&](const char* name, const DLTensor& value) { quantizer.observe(name, value); });
  ramjet_forward_args forward{sizeof(ramjet_forward_args), RAMJET_ABI_VERSION, 0, 0, args.seed, 0};
  int64_t batches = 0;
  try {
    Example outputs;
    while (batches < config.calibration_batches) {
      auto batch = data.next_batch();
      if (!batch) break;
      outputs = Example{};
      program.forward(forward, *batch, outputs);
      ++batches;
    }
  } catch (...) {
    program.set_taps({}, nullptr);
    throw;
  }
  program.set_taps({}, nullptr);
  if (batches < config.calibration_batches)
    log(RAMJET_LOG_WARNING, "export", "calibration asked for " + std::to_string(config.calibration_batches) +
                                          " batches; " + pointer + " had only " + std::to_string(batches));
  return quantizer.quantize(graph, parameters);
}

void prepare_export_destination(const PipelineManifest& manifest) {
  const ExportConfig config = read_export_config(manifest);
  if (!config.path.has_parent_path()) return;
  std::error_code error;
  std::filesystem::create_directories(config.path.parent_path(), error);
  if (error || !std::filesystem::is_directory(config.path.parent_path()))
    throw InvalidInput(manifest.where("/export/path") + ": cannot create the folder " +
                       config.path.parent_path().string() + (error ? ": " + error.message() : std::string()));
}

nlohmann::json export_trained_model(const PipelineManifest& manifest, PluginRegistry& registry, Example& parameters,
                                    std::ostream* progress, std::vector<int32_t>* int8_predictions) {
  const ExportConfig config = read_export_config(manifest);
  const Graph graph = build_graph(manifest);
  auto backend = make_training_backend(manifest, registry);
  const std::string calibration_pointer = "/data/" + config.calibration_data;
  const int64_t batch = manifest.doc["data"].contains(config.calibration_data)
                            ? manifest.doc["data"][config.calibration_data].value("batch", int64_t{32})
                            : 32;
  // Calibrate and score in float32 whatever precision trained the model, as TFLiteConverter does.
  auto program = backend->compile(graph.ir, {{"batch", batch}, {"precision", "float32"}});
  program->set_state("parameters", parameters);
  const bool has_eval = manifest.doc["data"].contains("eval");

  nlohmann::json report = {{"path", config.path.string()},
                           {"format", config.format},
                           {"quantizer", config.quantizer},
                           {"mode", config.mode},
                           {"input_type", config.input_type},
                           {"output_type", config.output_type},
                           {"calibration", {{"method", config.calibration_method},
                                            {"batches", config.calibration_batches},
                                            {"data", config.calibration_data}}},
                           {"fp32_weight_bytes", float_bytes(parameters)}};
  if (has_eval && config.evaluate) {
    const Evaluation fp32 = evaluate_program(manifest, registry, *program, graph.ir);
    report["fp32_accuracy"] = fp32.accuracy;
    report["fp32_samples_per_s"] = fp32.samples_per_s;
  }

  const auto start = std::chrono::steady_clock::now();
  Quantizer::Result quantized = quantize_model(manifest, registry, *program, graph.ir, parameters, config);
  program.reset();
  CreateArgs exporter_args;
  exporter_args.where = manifest.where("/export/format");
  Exporter exporter(registry.component(RAMJET_KIND_EXPORTER, config.format), exporter_args);
  prepare_export_destination(manifest);
  exporter.export_model(quantized.graph, quantized.parameters, config.path);
  report["file_bytes"] = static_cast<int64_t>(std::filesystem::file_size(config.path));
  report["size_ratio"] = report["file_bytes"].get<double>() / report["fp32_weight_bytes"].get<double>();
  report["quantize_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (has_eval && config.evaluate && config.mode == "full_integer") {
    auto int8 = backend->compile(quantized.graph, {{"batch", batch}, {"precision", "int8"}});
    int8->set_state("parameters", quantized.parameters);
    Evaluation q = evaluate_program(manifest, registry, *int8, quantized.graph, int8_predictions != nullptr);
    if (int8_predictions) *int8_predictions = std::move(q.predictions);
    report["int8_accuracy"] = q.accuracy;
    report["int8_samples_per_s"] = q.samples_per_s;
  }
  if (progress) {
    char line[320];
    std::snprintf(line, sizeof line, "exported %s (%lld bytes, %.0f%% of the float32 weights)", config.path.c_str(),
                  static_cast<long long>(report["file_bytes"].get<int64_t>()), 100 * report["size_ratio"].get<double>());
    *progress << line;
    if (report.contains("fp32_accuracy") && report.contains("int8_accuracy")) {
      std::snprintf(line, sizeof line, "; accuracy float32 %.4f, int8 %.4f", report["fp32_accuracy"].get<double>(),
                    report["int8_accuracy"].get<double>());
      *progress << line;
    }
    *progress << "\n";
  }
  return report;
}

}  // namespace ramjet::core
