#include "ramjet/train/evaluation.hpp"

#include "ramjet/plugin/failure.hpp"
#include "ramjet/plugin/trace.hpp"

#include <chrono>

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

Evaluation evaluate_program(Program& program, const nlohmann::json& graph, InputPipeline& data, uint64_t seed,
                            bool keep_predictions) {
  const std::string output = graph.at("outputs").at(0).get<std::string>();
  const std::string labels_name = graph.contains("labels") ? graph["labels"].value("name", std::string("label")) : "label";
  const std::string where = data.spec().origin.where(data.spec().pointer);
  ramjet_forward_args args{sizeof(ramjet_forward_args), RAMJET_ABI_VERSION, 0, 0, seed, 0};
  Evaluation result;
  int64_t correct = 0, counted = 0, timed_samples = 0, first_batch = -1;
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
    int64_t weight = n;
    const DLTensor* out = outputs.find(output);
    const bool classes = out != nullptr && out->dtype.code == kDLFloat && out->dtype.bits == 32 && out->ndim == 2 &&
                         out->shape[0] == n && labels->dtype.code != kDLFloat;
    if (classes) {  // one prediction per example: the top class
      const float* logits = static_cast<const float*>(first_byte(*out));
      const int64_t k = out->shape[1];
      for (int64_t i = 0; i < n; ++i) {
        const float* row = logits + i * k;
        int64_t best = 0;
        for (int64_t c = 1; c < k; ++c)
          if (row[c] > row[best]) best = c;
        correct += best == label_at(*labels, i);
        if (keep_predictions) result.predictions.push_back(static_cast<int32_t>(best));
      }
    } else if (positions != nullptr && right != nullptr && positions->dtype.code == kDLInt &&
               positions->dtype.bits == 32 && right->dtype.code == kDLInt && right->dtype.bits == 32) {
      // The loss counted positions of its own (a sequence model's tokens): its accuracy is the backend's.
      weight = *static_cast<const int32_t*>(first_byte(*positions));
      correct += *static_cast<const int32_t*>(first_byte(*right));
    } else if (labels->dtype.code != kDLFloat) {
      throw RuntimeFailure("evaluation: the program returned neither float32 [batch, classes] '" + output +
                           "' nor the counts of a loss over positions");
    }  // else a regression: a loss, no accuracy
    if (loss != nullptr && loss->dtype.code == kDLFloat && loss->dtype.bits == 32)
      loss_sum += static_cast<double>(*static_cast<const float*>(first_byte(*loss))) * static_cast<double>(weight);
    else has_loss = false;
    result.samples += n;
    counted += weight;
  }
  if (result.samples == 0) throw InvalidInput(where + ": the pipeline produced no data to evaluate");
  result.accuracy = counted > 0 ? static_cast<double>(correct) / static_cast<double>(counted) : 0.0;
  if (has_loss) result.loss = counted > 0 ? loss_sum / static_cast<double>(counted) : 0.0;
  result.samples_per_s = timed_s > 0 ? static_cast<double>(timed_samples) / timed_s : 0.0;
  return result;
}

}  // namespace ramjet::core
