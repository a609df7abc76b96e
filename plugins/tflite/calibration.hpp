// Calibration observers: what the int8 quantizer remembers of each tapped tensor. Min/max always; for the
// percentile and MSE methods also a histogram of bounded size.
#pragma once

#include <ramjet/sdk.hpp>

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace tflite_plugin {

// Counts over [-range, range) in kBins equal bins. When a value falls outside, the range doubles and adjacent
// bins merge pairwise (exact, as PyTorch's HistogramObserver and TensorRT's calibrators re-bin), so memory stays
// at kBins counters however wide the values spread.
class Histogram {
 public:
  static constexpr int kBins = 2048;

  void add(std::span<const float> values, float batch_abs_max);
  bool empty() const { return total_ == 0; }
  uint64_t total() const { return total_; }
  double bin_width() const { return 2.0 * range_ / kBins; }
  double bin_lower(int bin) const { return -range_ + bin * bin_width(); }
  double bin_center(int bin) const { return bin_lower(bin) + 0.5 * bin_width(); }
  const std::vector<uint64_t>& counts() const { return counts_; }

 private:
  void double_range();

  double range_ = 0;
  uint64_t total_ = 0;
  std::vector<uint64_t> counts_;
};

class TensorObserver {
 public:
  explicit TensorObserver(bool keep_histogram) : keep_histogram_(keep_histogram) {}
  // Throws on a non-finite value: a model that produces one cannot be calibrated.
  void observe(std::span<const float> values, const std::string& name);

  float min() const { return min_; }
  float max() const { return max_; }
  int64_t batches() const { return batches_; }
  const Histogram& histogram() const { return histogram_; }
  bool has_histogram() const { return keep_histogram_; }

 private:
  bool keep_histogram_;
  float min_ = 0, max_ = 0;
  int64_t batches_ = 0;
  Histogram histogram_;
};

// Observers by tensor name.
class Calibration {
 public:
  explicit Calibration(bool keep_histograms) : keep_histograms_(keep_histograms) {}
  // `value` must be a float32 CPU tensor (any shape, contiguous).
  void observe(const std::string& name, const DLTensor& value);
  // Null when the tensor was never observed.
  const TensorObserver* find(const std::string& name) const;
  // The most batches any tensor saw (for the qgraph's calibration record).
  int64_t batches() const;

 private:
  bool keep_histograms_;
  std::map<std::string, TensorObserver> observers_;
};

}  // namespace tflite_plugin
