// The model's metrics, scored on the host over an evaluation's batches: accuracy and top-k for classes; MAE, MSE,
// PSNR and SSIM for values (tf.image.psnr and tf.image.ssim's definitions, averaged per example as Keras averages
// a metric function). Built from the graph IR's "metrics" (model/metric_specs), so the names and options were
// checked when the manifest was read.
#pragma once

#include <dlpack/dlpack.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ramjet::core {

using MetricValues = std::vector<std::pair<std::string, double>>;  // in the model's order

// Whether a larger value is better (accuracy, PSNR, SSIM) or a smaller one (loss, MAE, MSE): what a monitor
// watching `name` (with or without "val_") minimizes or maximizes.
bool metric_is_maximized(const std::string& name);

class MetricSet {
 public:
  explicit MetricSet(const nlohmann::json& specs);
  ~MetricSet();
  MetricSet(MetricSet&&) noexcept;

  bool empty() const { return metrics_.empty(); }
  // One batch of the scored output (float32 [n, ...]) and its labels (class indices, or float32 targets shaped as
  // the output). Throws RuntimeFailure naming `where` when they do not fit the metric.
  void add(const DLTensor& output, const DLTensor& labels, const std::string& where);
  // A sequence model's accuracy, counted by the backend's loss over its positions.
  void add_counted(int64_t correct, int64_t positions);
  MetricValues values() const;

  class Metric;

 private:
  std::vector<std::unique_ptr<Metric>> metrics_;
};

// The top class of each of `n` rows of `k` logits.
void top_classes(const float* logits, int64_t n, int64_t k, std::vector<int32_t>& out);

}  // namespace ramjet::core
