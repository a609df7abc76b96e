#include "ramjet/deploy/model_export.hpp"

#include "ramjet/plugin/atomic_file.hpp"

#include "ramjet/deploy/model_eval.hpp"
#include "ramjet/data/input_pipeline.hpp"
#include "ramjet/plugin/failure.hpp"
#include "ramjet/plugin/log.hpp"
#include "ramjet/train/evaluation.hpp"
#include "ramjet/train/trainer.hpp"

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

const PipelineSpec& calibration_pipeline(const Plan& plan, const ExportConfig& config) {
  const auto& spec = config.calibration_data == "eval" ? plan.eval_data : plan.train_data;
  if (!spec)
    throw InvalidInput(plan.origin.where("/data/" + config.calibration_data) +
                       ": calibration reads this pipeline, and the manifest has none");
  return *spec;
}

}  // namespace

QuantizedModel quantize_model(const Plan& plan, PluginRegistry& registry, Program& program, Example& parameters,
                              const ExportConfig& config) {
  Quantizer quantizer(registry.component(RAMJET_KIND_QUANTIZER, config.quantizer.type()), plan.create_args(config.quantizer));
  // Calibration reads one pass of the chosen pipeline, as it is (TFLiteConverter's representative dataset).
  PipelineSpec spec = calibration_pipeline(plan, config);
  spec.epochs = 1;
  const std::string pointer = spec.pointer;
  InputPipeline data(std::move(spec), registry, plan.seed);
  const nlohmann::json& graph = plan.graph->ir;
  program.set_taps(activation_names(graph), [&](const char* name, const DLTensor& value) { quantizer.observe(name, value); });
  ramjet_forward_args forward{sizeof(ramjet_forward_args), RAMJET_ABI_VERSION, 0, 0, plan.seed, 0};
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

bool runs_as_integer(const QuantizedModel& model) {
  return model.graph.value("mode", std::string("full_integer")) == "full_integer";
}

namespace {

std::unique_ptr<Program> compile_int8(const Backend& backend, QuantizedModel& model, int64_t batch) {
  auto program = backend.compile(model.graph, {{"batch", batch}, {"precision", "int8"}});
  program->set_state(RAMJET_STATE_PARAMETERS, model.parameters);
  return program;
}

}  // namespace

QuantizedProgram compile_quantized(const Plan& plan, PluginRegistry& registry, const Backend& trained_on,
                                   QuantizedModel& model, int64_t batch, int64_t threads) {
  const std::string trained_name = plan.train->backend.type();
  try {
    return {nullptr, compile_int8(trained_on, model, batch), trained_name};
  } catch (const InvalidInput&) {  // rethrown below when no other backend runs it
    for (const std::string& name : registry.available(RAMJET_KIND_BACKEND)) {
      if (name == trained_name) continue;
      CreateArgs args;
      args.base_dir = plan.origin.base_dir();
      args.seed = plan.seed;
      args.where = plan.origin.where("/train/backend") + " (another backend, for the int8 model)";
      if (threads > 0) args.config["threads"] = threads;
      try {
        auto backend = std::make_unique<Backend>(registry.component(RAMJET_KIND_BACKEND, name), args);
        auto program = compile_int8(*backend, model, batch);
        return {std::move(backend), std::move(program), name};
      } catch (const InvalidInput&) {  // it cannot run this graph either
      } catch (const RuntimeFailure&) {  // it cannot run here (a GPU backend on a machine without one)
      }
    }
    throw;
  }
}

void prepare_export_destination(const Plan& plan) {
  const std::filesystem::path& path = plan.exporting->path;
  if (const std::string why = prepare_destination(path); !why.empty())
    throw InvalidInput(plan.origin.where("/export/path") + ": " + why);
}

nlohmann::json export_trained_model(const Plan& plan, PluginRegistry& registry, Example& parameters,
                                    std::ostream* progress, std::vector<int32_t>* int8_predictions) {
  const ExportConfig& config = *plan.exporting;
  auto backend = make_training_backend(plan, registry);
  const int64_t batch = calibration_pipeline(plan, config).batch;
  // Calibrate and score in float32 whatever precision trained the model, as TFLiteConverter does.
  auto program = backend->compile(plan.graph->ir, {{"batch", batch}});
  program->set_state(RAMJET_STATE_PARAMETERS, parameters);
  const bool evaluate = plan.eval_data && config.evaluate;

  nlohmann::json report = {{"path", config.path.string()},
                           {"format", config.exporter.type()},
                           {"quantizer", config.quantizer.type()},
                           {"quantizer_config", config.quantizer.own_config()},
                           {"calibration", {{"batches", config.calibration_batches}, {"data", config.calibration_data}}},
                           {"fp32_weight_bytes", float_bytes(parameters)}};
  if (evaluate) {
    InputPipeline data(*plan.eval_data, registry, plan.seed);
    const Evaluation fp32 = evaluate_program(*program, plan.graph->ir, data, plan.seed);
    for (const auto& [name, value] : fp32.metrics) report["fp32_" + name] = value;
    report["fp32_samples_per_s"] = fp32.samples_per_s;
  }

  const auto start = std::chrono::steady_clock::now();
  QuantizedModel quantized = quantize_model(plan, registry, *program, parameters, config);
  program.reset();
  report["mode"] = quantized.graph.value("mode", std::string("full_integer"));
  CreateArgs exporter_args = plan.create_args(config.exporter);
  Exporter exporter(registry.component(RAMJET_KIND_EXPORTER, config.exporter.type()), exporter_args);
  prepare_export_destination(plan);
  exporter.export_model(quantized.graph, quantized.parameters, config.path);
  report["file_bytes"] = static_cast<int64_t>(std::filesystem::file_size(config.path));
  report["size_ratio"] = report["file_bytes"].get<double>() / report["fp32_weight_bytes"].get<double>();
  report["quantize_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (evaluate && runs_as_integer(quantized)) {
    // The file is written either way; a backend that cannot run integer inference on this machine (no VNNI, say)
    // leaves its accuracy out and says why.
    QuantizedProgram int8;
    try {
      int8 = compile_quantized(plan, registry, *backend, quantized, batch);
    } catch (const InvalidInput& e) {
      report["int8_evaluation"] = std::string("skipped: ") + e.what();
      log(RAMJET_LOG_WARNING, "export", "int8 evaluation skipped: " + std::string(e.what()));
    }
    if (int8.program) {
      report["int8_backend"] = int8.backend;
      InputPipeline data(*plan.eval_data, registry, plan.seed);
      Evaluation q = evaluate_program(*int8.program, quantized.graph, data, plan.seed, int8_predictions != nullptr);
      if (int8_predictions) *int8_predictions = std::move(q.predictions);
      for (const auto& [name, value] : q.metrics) report["int8_" + name] = value;
      report["int8_samples_per_s"] = q.samples_per_s;
    }
  }
  if (progress) {
    char line[320];
    std::snprintf(line, sizeof line, "exported %s (%lld bytes, %.0f%% of the float32 weights)", config.path.c_str(),
                  static_cast<long long>(report["file_bytes"].get<int64_t>()), 100 * report["size_ratio"].get<double>());
    *progress << line;
    // Each metric in float32 and int8, side by side: what quantization cost.
    for (const auto& spec : plan.graph->ir.value("metrics", nlohmann::json::array())) {
      const std::string name = spec.at("name").get<std::string>();
      if (!report.contains("fp32_" + name) || !report.contains("int8_" + name)) continue;
      std::snprintf(line, sizeof line, "; %s float32 %.4f, int8 %.4f", name.c_str(), report["fp32_" + name].get<double>(),
                    report["int8_" + name].get<double>());
      *progress << line;
    }
    *progress << "\n";
  }
  return report;
}

}  // namespace ramjet::core
