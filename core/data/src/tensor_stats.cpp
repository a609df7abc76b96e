#include "ramjet/data/tensor_stats.hpp"

#include "ramjet/plugin/failure.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace ramjet::core {
namespace {

// Calls f(const T* data) with the tensor's element type.
template <class F>
void visit_values(const DLTensor& t, F&& f) {
  const void* p = first_byte(t);
  const auto code = t.dtype.code;
  const auto bits = t.dtype.bits;
  if (t.dtype.lanes != 1) throw RuntimeFailure("statistics: vector dtypes are not supported");
  if (code == kDLFloat && bits == 32) return f(static_cast<const float*>(p));
  if (code == kDLFloat && bits == 64) return f(static_cast<const double*>(p));
  if (code == kDLUInt && bits == 8) return f(static_cast<const uint8_t*>(p));
  if (code == kDLUInt && bits == 16) return f(static_cast<const uint16_t*>(p));
  if (code == kDLInt && bits == 8) return f(static_cast<const int8_t*>(p));
  if (code == kDLInt && bits == 16) return f(static_cast<const int16_t*>(p));
  if (code == kDLInt && bits == 32) return f(static_cast<const int32_t*>(p));
  if (code == kDLInt && bits == 64) return f(static_cast<const int64_t*>(p));
  throw RuntimeFailure("statistics: dtype " + dtype_to_string(t.dtype) + " is not supported");
}

}  // namespace

void TensorStats::add_batch(const Example& batch) {
  for (const auto& entry : batch.entries) {
    const DLTensor& t = entry.tensor->dl_tensor;
    auto it = std::find_if(tensors_.begin(), tensors_.end(), [&](const auto& p) { return p.first == entry.name; });
    if (it == tensors_.end()) {
      Accumulator a;
      a.dtype = dtype_to_string(t.dtype);
      a.element_shape.assign(t.shape + std::min(1, t.ndim), t.shape + t.ndim);
      a.integral = t.dtype.code == kDLInt || t.dtype.code == kDLUInt;
      a.histogram_enabled = a.integral && a.element_shape.empty();
      tensors_.emplace_back(entry.name, std::move(a));
      it = std::prev(tensors_.end());
    }
    Accumulator& a = it->second;
    const int64_t n = element_count(t);
    visit_values(t, [&](const auto* values) {
      double lo = a.values ? a.min : INFINITY, hi = a.values ? a.max : -INFINITY, s = 0, s2 = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double v = static_cast<double>(values[i]);
        lo = std::min(lo, v);
        hi = std::max(hi, v);
        s += v;
        s2 += v * v;
        if (a.histogram_enabled) {
          ++a.histogram[static_cast<int64_t>(values[i])];
          if (a.histogram.size() > kMaxHistogramBins) {
            a.histogram_enabled = false;
            a.histogram.clear();
          }
        }
      }
      a.min = lo;
      a.max = hi;
      a.sum += s;
      a.sum_squares += s2;
    });
    a.values += n;
  }
}

nlohmann::json TensorStats::to_json() const {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, a] : tensors_) {
    nlohmann::json j;
    j["dtype"] = a.dtype;
    j["shape"] = a.element_shape;
    j["values"] = a.values;
    if (a.values > 0) {
      const double mean = a.sum / static_cast<double>(a.values);
      j["min"] = a.min;
      j["max"] = a.max;
      j["mean"] = mean;
      j["std"] = std::sqrt(std::max(0.0, a.sum_squares / static_cast<double>(a.values) - mean * mean));
    }
    if (a.histogram_enabled) {
      nlohmann::json h = nlohmann::json::object();
      for (const auto& [value, count] : a.histogram) h[std::to_string(value)] = count;
      j["histogram"] = h;
    }
    out[name] = j;
  }
  return out;
}

}  // namespace ramjet::core
