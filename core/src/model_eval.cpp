#include "ramjet/core/model_eval.hpp"

#include "ramjet/core/atomic_file.hpp"
#include "ramjet/core/checkpoint.hpp"
#include "ramjet/core/export_config.hpp"
#include "ramjet/core/failure.hpp"
#include "ramjet/core/graph.hpp"
#include "ramjet/core/input_pipeline.hpp"
#include "ramjet/core/model_export.hpp"
#include "ramjet/core/train_config.hpp"

#include <chrono>
#include <cstdio>
#include <ostream>

namespace ramjet::core {
namespace {

int64_t label_at(const DLTensor& labels, int64_t i) {
  if (labels.dtype.code == kDLInt && labels.dtype.bits == 32) return static_cast<const int32_t*>(first_byte(labels))[i];
  if (labels.dtype.code == kDLInt && labels.dtype.bits == 64) return static_cast<const int64_t*>(first_byte(labels))[i];
  if (labels.dtype.code == kDLUInt && labels.dtype.bits == 8) return static_cast<const uint8_t*>(first_byte(labels))[i];
  throw RuntimeFailure("evaluation: labels must be int32, int64 or uint8 class indices");
}

}  // namespace

nlohmann::json Evaluation::to_json() const {
  nlohmann::json j = {{"accuracy", accuracy}, {"samples", samples}, {"samples_per_s", samples_per_s}};
  if (loss) j["loss"] = *loss;
  return j;
}

std::unique_ptr<Backend> make_training_backend(const PipelineManifest& manifest, PluginRegistry& registry,
                                               int64_t threads) {
  const TrainConfig cfg = read_train_config(manifest);
  CreateArgs args;
  args.config = cfg.backend_config;
  if (threads > 0) args.config["threads"] = threads;
  else if (cfg.threads > 0) args.config["threads"] = cfg.threads;
  args.where = manifest.where("/train/backend");
  args.seed = manifest.doc.value("seed", uint64_t{0});
  return std::make_unique<Backend>(registry.component(RAMJET_KIND_BACKEND, cfg.backend), args);
}

Evaluation evaluate_program(const PipelineManifest& manifest, PluginRegistry& registry, Program& program,
                            const nlohmann::json& graph, bool keep_predictions) {
  if (!manifest.doc["data"].contains("eval"))
    throw InvalidInput(manifest.where("/data/eval") + ": evaluation needs an eval input pipeline");
  const std::string output = graph.at("outputs").at(0).get<std::string>();
  const std::string labels_name = graph.contains("labels") ? graph["labels"].value("name", std::string("label")) : "label";
  const uint64_t seed = manifest.doc.value("seed", uint64_t{0});
  InputPipeline eval(manifest, "/data/eval", registry, seed);
  ramjet_forward_args args{sizeof(ramjet_forward_args), RAMJET_ABI_VERSION, 0, 0, seed, 0};
  Evaluation result;
  int64_t correct = 0, timed_samples = 0, first_batch = -1;
  double loss_sum = 0, timed_s = 0;
  bool has_loss = true;
  Example outputs;
  while (auto batch = eval.next_batch()) {
    const DLTensor* labels = batch->find(labels_name);
    if (labels == nullptr)
      throw InvalidInput(manifest.where("/data/eval") + ": the batches have no '" + labels_name + "' tensor to score against");
    const int64_t n = labels->shape[0];
    outputs = Example{};
    const auto start = std::chrono::steady_clock::now();
    program.forward(args, *batch, outputs);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // Steady state: the first batch pays for lazy setup, and a short last batch builds its own plan.
    if (first_batch < 0) first_batch = n;
    else if (n == first_batch) timed_s += seconds, timed_samples += n;
    const DLTensor* out = outputs.find(output);
    if (out == nullptr || out->dtype.code != kDLFloat || out->dtype.bits != 32 || out->ndim != 2 || out->shape[0] != n)
      throw RuntimeFailure("evaluation: the program did not return a float32 [batch, classes] '" + output + "'");
    const float* logits = static_cast<const float*>(first_byte(*out));
    const int64_t classes = out->shape[1];
    for (int64_t i = 0; i < n; ++i) {
      const float* row = logits + i * classes;
      int64_t best = 0;
      for (int64_t c = 1; c < classes; ++c)
        if (row[c] > row[best]) best = c;
      correct += best == label_at(*labels, i);
      if (keep_predictions) result.predictions.push_back(static_cast<int32_t>(best));
    }
    if (const DLTensor* loss = outputs.find("loss"); loss != nullptr && loss->dtype.code == kDLFloat && loss->dtype.bits == 32)
      loss_sum += static_cast<double>(*static_cast<const float*>(first_byte(*loss))) * static_cast<double>(n);
    else
      has_loss = false;
    result.samples += n;
  }
  if (result.samples == 0) throw InvalidInput(manifest.where("/data/eval") + ": the eval pipeline produced no data");
  result.accuracy = static_cast<double>(correct) / static_cast<double>(result.samples);
  if (has_loss) result.loss = loss_sum / static_cast<double>(result.samples);
  result.samples_per_s = timed_s > 0 ? static_cast<double>(timed_samples) / timed_s : 0.0;
  return result;
}

nlohmann::json evaluate_checkpoint(const PipelineManifest& original, PluginRegistry& registry, const EvalOptions& options) {
  require_valid(original, registry);
  if (!original.doc.contains("train") || !original.doc.contains("model"))
    throw InvalidInput(original.where("") + ": evaluation needs the model and train sections the checkpoint came from");
  if (options.precision != "float32" && options.precision != "int8")
    throw InvalidInput("--precision must be float32 or int8, got '" + options.precision + "'");
  PipelineManifest manifest = original;
  if (!manifest.doc["data"].contains("eval"))
    throw InvalidInput(manifest.where("/data/eval") + ": evaluation needs an eval input pipeline");
  if (options.batch > 0) manifest.doc["data"]["eval"]["batch"] = options.batch;

  std::filesystem::path file;
  if (options.checkpoint) {
    file = *options.checkpoint;
  } else {
    const TrainConfig cfg = read_train_config(manifest);
    if (!cfg.checkpoint)
      throw InvalidInput(manifest.where("/train/checkpoint") + ": no checkpoint directory; pass --checkpoint FILE");
    const std::filesystem::path dir = std::filesystem::path(cfg.checkpoint->dir).is_absolute()
                                          ? std::filesystem::path(cfg.checkpoint->dir)
                                          : manifest.base_dir() / cfg.checkpoint->dir;
    auto latest = latest_checkpoint(dir);
    if (!latest) throw InvalidInput(dir.string() + ": no checkpoint to evaluate (train first with `ramjet run`)");
    file = *latest;
  }
  Checkpoint checkpoint = load_checkpoint(file);

  const Graph graph = build_graph(manifest);
  auto backend = make_training_backend(manifest, registry, options.threads);
  const int64_t batch = manifest.doc["data"]["eval"].value("batch", int64_t{32});
  auto program = backend->compile(graph.ir, {{"batch", batch}, {"precision", "float32"}});
  program->set_state("parameters", checkpoint.parameters);

  nlohmann::json report = {{"manifest", manifest.path.string()}, {"checkpoint", file.string()},
                           {"precision", options.precision}, {"batch", batch}};
  Evaluation result;
  if (options.precision == "float32") {
    result = evaluate_program(manifest, registry, *program, graph.ir, options.predictions.has_value());
  } else {
    ExportConfig config;
    if (manifest.doc.contains("export")) config = read_export_config(manifest);
    Quantizer::Result quantized = quantize_model(manifest, registry, *program, graph.ir, checkpoint.parameters, config);
    program.reset();
    auto int8 = backend->compile(quantized.graph, {{"batch", batch}, {"precision", "int8"}});
    int8->set_state("parameters", quantized.parameters);
    result = evaluate_program(manifest, registry, *int8, quantized.graph, options.predictions.has_value());
    report["calibration"] = {{"method", config.calibration_method}, {"batches", config.calibration_batches}};
  }
  report.update(result.to_json());
  if (options.predictions) {
    std::string bytes(result.predictions.size() * sizeof(int32_t), '\0');
    for (size_t i = 0; i < result.predictions.size(); ++i) {
      const uint32_t v = static_cast<uint32_t>(result.predictions[i]);
      for (int b = 0; b < 4; ++b) bytes[i * 4 + b] = static_cast<char>((v >> (8 * b)) & 0xff);
    }
    write_file_atomically(*options.predictions, bytes);
    report["predictions"] = options.predictions->string();
  }
  if (options.progress) {
    char line[256];
    std::snprintf(line, sizeof line, "%s: accuracy %.4f on %lld samples, %.0f samples/s (batch %lld)\n",
                  options.precision.c_str(), result.accuracy, static_cast<long long>(result.samples),
                  result.samples_per_s, static_cast<long long>(batch));
    *options.progress << line;
  }
  return report;
}

}  // namespace ramjet::core
