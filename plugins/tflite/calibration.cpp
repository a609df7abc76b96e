#include "calibration.hpp"

#include <algorithm>
#include <cmath>

namespace tflite_plugin {

void Histogram::double_range() {
  std::vector<uint64_t> merged(kBins, 0);
  // Old bin i covers [-R + i·w, ...); in the doubled range that starts in new bin kBins/4 + i/2.
  for (int i = 0; i < kBins; ++i) merged[kBins / 4 + i / 2] += counts_[i];
  counts_ = std::move(merged);
  range_ *= 2;
}

void Histogram::add(std::span<const float> values, float batch_abs_max) {
  if (values.empty()) return;
  if (counts_.empty()) {
    counts_.assign(kBins, 0);
    // A first batch of zeros still needs a non-empty range; later batches double it as far as they need.
    range_ = batch_abs_max > 0 ? batch_abs_max : 1e-8;
  }
  while (batch_abs_max >= range_) double_range();
  const double scale = kBins / (2.0 * range_);
  for (float v : values) {
    const int bin = static_cast<int>((static_cast<double>(v) + range_) * scale);
    ++counts_[static_cast<size_t>(std::clamp(bin, 0, kBins - 1))];
  }
  total_ += values.size();
}

void TensorObserver::observe(std::span<const float> values, const std::string& name) {
  if (values.empty()) return;
  float lo = values[0], hi = values[0];
  for (float v : values) {
    if (!std::isfinite(v))
      throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "int8 quantizer: tensor '" + name +
                                                           "' has a non-finite value during calibration");
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  min_ = batches_ == 0 ? lo : std::min(min_, lo);
  max_ = batches_ == 0 ? hi : std::max(max_, hi);
  ++batches_;
  if (keep_histogram_) histogram_.add(values, std::max(std::abs(lo), std::abs(hi)));
}

void Calibration::observe(const std::string& name, const DLTensor& value) {
  const std::string where = "int8 quantizer: observe('" + name + "')";
  if (value.device.device_type != kDLCPU && value.device.device_type != kDLCUDAHost)
    throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, where + ": the tensor must be CPU-readable");
  if (!ramjet::same_dtype(value.dtype, ramjet::dtype_of<float>()))
    throw ramjet::Error(RAMJET_ERR_UNSUPPORTED,
                        where + ": expected a float32 tensor, got " + ramjet::dtype_name(value.dtype));
  if (!ramjet::is_contiguous(value))
    throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, where + ": the tensor must be contiguous");
  const auto* data = reinterpret_cast<const float*>(static_cast<const char*>(value.data) + value.byte_offset);
  const auto count = static_cast<size_t>(ramjet::element_count(value));
  auto it = observers_.try_emplace(name, keep_histograms_).first;
  it->second.observe(std::span<const float>(data, count), name);
}

const TensorObserver* Calibration::find(const std::string& name) const {
  auto it = observers_.find(name);
  return it == observers_.end() || it->second.batches() == 0 ? nullptr : &it->second;
}

int64_t Calibration::batches() const {
  int64_t most = 0;
  for (const auto& [name, observer] : observers_) most = std::max(most, observer.batches());
  return most;
}

}  // namespace tflite_plugin
