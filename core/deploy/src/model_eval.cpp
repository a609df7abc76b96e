#include "ramjet/deploy/model_eval.hpp"

#include "checkpoint_choice.hpp"
#include "prediction_files.hpp"

#include "ramjet/deploy/model_export.hpp"
#include "ramjet/plugin/atomic_file.hpp"
#include "ramjet/plugin/failure.hpp"
#include "ramjet/plugin/trace.hpp"
#include "ramjet/train/checkpoint.hpp"
#include "ramjet/train/evaluation.hpp"
#include "ramjet/train/trainer.hpp"

#include <cstdio>
#include <ostream>

namespace ramjet::core {
namespace {

std::string fixed4(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4f", v);
  return text;
}

// Image predictions are written as PNGs on the scale the model's PSNR or SSIM measures them on (1.0 by default).
double image_scale(const nlohmann::json& ir) {
  for (const auto& spec : ir.value("metrics", nlohmann::json::array()))
    if (spec.contains("max_val")) return spec["max_val"].get<double>();
  return 1.0;
}

}  // namespace

nlohmann::json evaluate_checkpoint(const Plan& original, PluginRegistry& registry, const EvalOptions& options) {
  if (!original.train || !original.graph)
    throw InvalidInput(original.origin.where("") + ": evaluation needs the model and train sections the checkpoint came from");
  if (options.precision != "float32" && options.precision != "int8")
    throw InvalidInput("--precision must be float32 or int8, got '" + options.precision + "'");
  Plan plan = original;
  PipelineSpec& eval_data = plan.eval_data.emplace(original.require_eval("evaluation"));
  if (options.batch > 0) eval_data.batch = options.batch;

  const std::filesystem::path file = checkpoint_to_use(plan, options.checkpoint, "evaluate");
  Checkpoint checkpoint = [&] {
    TraceSpan span("load checkpoint");
    return load_checkpoint(file);
  }();

  auto backend = make_training_backend(plan, registry, options.threads);
  const int64_t batch = eval_data.batch;
  auto program = [&] {
    TraceSpan span("compile");
    return backend->compile(plan.graph->ir, {{"batch", batch}});
  }();
  // Every parameter the model has, from the checkpoint: none silently left at its initial value.
  check_checkpoint_fits(checkpoint, file, program->get_state(RAMJET_STATE_PARAMETERS), nullptr);
  program->set_state(RAMJET_STATE_PARAMETERS, checkpoint.parameters);

  nlohmann::json report = {{"manifest", plan.origin.file.string()}, {"checkpoint", file.string()},
                           {"precision", options.precision}, {"batch", batch}};
  const bool keep = options.predictions.has_value();
  Evaluation result;
  if (options.precision == "float32") {
    InputPipeline data(eval_data, registry, plan.seed);
    result = evaluate_program(*program, plan.graph->ir, data, plan.seed, keep);
  } else {
    const ExportConfig config = plan.exporting.value_or(ExportConfig{});
    QuantizedModel quantized = [&] {
      TraceSpan span("calibrate and quantize");
      return quantize_model(plan, registry, *program, checkpoint.parameters, config);
    }();
    program.reset();
    QuantizedProgram int8 = compile_quantized(plan, registry, *backend, quantized, batch, options.threads);
    report["int8_backend"] = int8.backend;
    InputPipeline data(eval_data, registry, plan.seed);
    result = evaluate_program(*int8.program, quantized.graph, data, plan.seed, keep);
    report["calibration"] = {{"batches", config.calibration_batches}, {"data", config.calibration_data}};
  }
  report.update(result.to_json());
  if (options.predictions) {
    nlohmann::json files = nlohmann::json::array();
    for (const auto& f : write_prediction_files(*options.predictions, result, image_scale(plan.graph->ir)))
      files.push_back(f.string());
    report["predictions"] = {{"dir", options.predictions->string()}, {"files", files.size()}};
  }
  if (options.progress) {
    std::string line = options.precision + ":";
    if (result.loss) line += " loss " + fixed4(*result.loss) + ",";
    for (const auto& [name, value] : result.metrics) line += " " + name + " " + fixed4(value) + ",";
    char tail[160];
    std::snprintf(tail, sizeof tail, " on %lld samples, %.0f samples/s (batch %lld)\n",
                  static_cast<long long>(result.samples), result.samples_per_s, static_cast<long long>(batch));
    *options.progress << line << tail;
    if (options.predictions) *options.progress << "predictions written to " << options.predictions->string() << "\n";
  }
  return report;
}

}  // namespace ramjet::core
