#include "ramjet/train/evaluation.hpp"

#include "ramjet/plugin/failure.hpp"
#include "ramjet/plugin/trace.hpp"

#include <chrono>
#include <cstring>

namespace ramjet::core {
namespace {

// The output the metrics score: the one the loss reads, else the first.
std::string scored_output(const nlohmann::json& graph) {
  if (graph.contains("loss")) return graph["loss"].at("input").get<std::string>();
  return graph.at("outputs").at(0).get<std::string>();
}

// A graph from before metrics were declared (or a quantized graph that dropped them) scores accuracy.
nlohmann::json metric_specs_of(const nlohmann::json& graph) {
  if (graph.contains("metrics")) return graph["metrics"];
  return nlohmann::json::array({{{"type", "accuracy"}, {"name", "accuracy"}}});
}

bool is_class_rows(const DLTensor* out, int64_t n) {
  return out != nullptr && out->dtype.code == kDLFloat && out->dtype.bits == 32 && out->ndim == 2 && out->shape[0] == n;
}

}  // namespace

void Evaluation::Kept::append(const DLTensor& batch) {
  if (batch.dtype.code != kDLFloat || batch.dtype.bits != 32 || batch.ndim < 1) return;
  if (values.empty()) shape.assign(batch.shape + 1, batch.shape + batch.ndim);
  const float* v = static_cast<const float*>(first_byte(batch));
  values.insert(values.end(), v, v + element_count(batch));
}

std::optional<double> Evaluation::metric(const std::string& name) const {
  for (const auto& [n, v] : metrics)
    if (n == name) return v;
  return std::nullopt;
}

nlohmann::json Evaluation::to_json() const {
  nlohmann::json j = {{"samples", samples}, {"samples_per_s", samples_per_s}};
  for (const auto& [name, value] : metrics) j[name] = value;
  if (loss) j["loss"] = *loss;
  return j;
}

Evaluation evaluate_program(Program& program, const nlohmann::json& graph, InputPipeline& data, uint64_t seed,
                            bool keep_predictions) {
  const std::string output = scored_output(graph);
  const std::string labels_name = graph.contains("labels") ? graph["labels"].value("name", std::string("label")) : "label";
  const std::string where = data.spec().origin.where(data.spec().pointer);
  MetricSet metrics(metric_specs_of(graph));
  ramjet_forward_args args{sizeof(ramjet_forward_args), RAMJET_ABI_VERSION, 0, 0, seed, 0};
  Evaluation result;
  int64_t counted = 0, timed_samples = 0, first_batch = -1;
  double loss_sum = 0, timed_s = 0;
  bool has_loss = true;
  Example outputs;
  while (auto batch = data.next_batch()) {
    const DLTensor* labels = batch->find(labels_name);
    if (labels == nullptr) throw InvalidInput(where + ": the batches have no '" + labels_name + "' tensor to score against");
    const int64_t n = labels->shape[0];
    outputs = Example{};
    const auto start = std::chrono::steady_clock::now();
    {
      TraceSpan span("forward", "samples", n);
      program.forward(args, *batch, outputs);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // Steady state: the first batch pays for lazy setup, and a short last batch builds its own plan.
    if (first_batch < 0) first_batch = n;
    else if (n == first_batch) timed_s += seconds, timed_samples += n;
    const DLTensor* loss = outputs.find(RAMJET_OUTPUT_LOSS);
    const DLTensor* right = outputs.find(RAMJET_OUTPUT_CORRECT);
    const DLTensor* positions = outputs.find(RAMJET_OUTPUT_COUNTED);
    const DLTensor* out = outputs.find(output);
    if (out == nullptr) throw RuntimeFailure("evaluation: the program returned no '" + output + "' output");
    int64_t weight = n;
    const bool counted_by_loss = !is_class_rows(out, n) && positions != nullptr && right != nullptr &&
                                 positions->dtype.code == kDLInt && positions->dtype.bits == 32 &&
                                 right->dtype.code == kDLInt && right->dtype.bits == 32;
    if (counted_by_loss) {
      // The loss counted positions of its own (a sequence model's tokens): its accuracy is the backend's.
      weight = *static_cast<const int32_t*>(first_byte(*positions));
      metrics.add_counted(*static_cast<const int32_t*>(first_byte(*right)), weight);
    } else {
      metrics.add(*out, *labels, where);
    }
    if (keep_predictions) {
      if (is_class_rows(out, n) && labels->dtype.code != kDLFloat)
        top_classes(static_cast<const float*>(first_byte(*out)), n, out->shape[1], result.predictions);
      result.outputs.append(*out);
      if (const DLTensor* input = batch->find(graph.at("inputs").at(0).at("name").get<std::string>()))
        result.inputs.append(*input);
      result.targets.append(*labels);
    }
    if (loss != nullptr && loss->dtype.code == kDLFloat && loss->dtype.bits == 32)
      loss_sum += static_cast<double>(*static_cast<const float*>(first_byte(*loss))) * static_cast<double>(weight);
    else has_loss = false;
    result.samples += n;
    counted += weight;
  }
  if (result.samples == 0) throw InvalidInput(where + ": the pipeline produced no data to evaluate");
  result.metrics = metrics.values();
  if (has_loss) result.loss = counted > 0 ? loss_sum / static_cast<double>(counted) : 0.0;
  result.samples_per_s = timed_s > 0 ? static_cast<double>(timed_samples) / timed_s : 0.0;
  return result;
}

}  // namespace ramjet::core
