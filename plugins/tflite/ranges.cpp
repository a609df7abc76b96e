#include "ranges.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tflite_plugin {

RangeMethod parse_range_method(const std::string& name, const std::string& where) {
  if (name == "minmax") return RangeMethod::minmax;
  if (name == "percentile") return RangeMethod::percentile;
  if (name == "mse") return RangeMethod::mse;
  throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT,
                      where + ": unknown calibration method '" + name + "' (minmax, percentile, mse)");
}

const char* range_method_name(RangeMethod method) {
  switch (method) {
    case RangeMethod::minmax: return "minmax";
    case RangeMethod::percentile: return "percentile";
    case RangeMethod::mse: return "mse";
  }
  return "?";
}

Range minmax_range(const TensorObserver& observer) { return {observer.min(), observer.max()}; }

namespace {

// The value below which a fraction `q` of the histogram's mass lies, interpolated linearly inside its bin.
double quantile(const Histogram& h, double q) {
  const double target = q * static_cast<double>(h.total());
  double below = 0;
  const auto& counts = h.counts();
  for (int i = 0; i < Histogram::kBins; ++i) {
    const double c = static_cast<double>(counts[static_cast<size_t>(i)]);
    if (c > 0 && below + c >= target) return h.bin_lower(i) + h.bin_width() * std::clamp((target - below) / c, 0.0, 1.0);
    below += c;
  }
  return h.bin_lower(Histogram::kBins - 1) + h.bin_width();
}

Range include_zero(Range r) { return {std::min(r.min, 0.0f), std::max(r.max, 0.0f)}; }

// Expected squared quantization error of the histogram's values for the int8 range [lo, hi] (lo <= 0 <= hi).
double quantization_error(const Histogram& h, double lo, double hi) {
  const double step = (hi - lo) / 255.0;
  const double rounding = step * step / 12.0;
  double error = 0;
  const auto& counts = h.counts();
  for (int i = 0; i < Histogram::kBins; ++i) {
    const uint64_t c = counts[static_cast<size_t>(i)];
    if (c == 0) continue;
    const double x = h.bin_center(i);
    const double e = x < lo ? (x - lo) * (x - lo) : x > hi ? (x - hi) * (x - hi) : rounding;
    error += static_cast<double>(c) * e;
  }
  return error;
}

}  // namespace

Range percentile_range(const TensorObserver& observer, double percentile) {
  if (!observer.has_histogram() || observer.histogram().empty() || percentile >= 100) return minmax_range(observer);
  const double tail = (100.0 - percentile) / 100.0;
  const Histogram& h = observer.histogram();
  Range r{static_cast<float>(quantile(h, tail)), static_cast<float>(quantile(h, 1.0 - tail))};
  // Interpolation inside a bin may step past what was seen; never widen beyond the observed range.
  r.min = std::clamp(r.min, observer.min(), observer.max());
  r.max = std::clamp(r.max, r.min, observer.max());
  return r;
}

Range mse_range(const TensorObserver& observer) {
  const Range full = include_zero(minmax_range(observer));
  if (!observer.has_histogram() || observer.histogram().empty() || full.max - full.min <= 0) return full;
  const Histogram& h = observer.histogram();
  // Candidates shrink geometrically (2^(-k/16), down to 1/4096 of the min-max range): heavy tails put the best
  // range orders of magnitude inside the extremes.
  constexpr int kSteps = 16 * 12;
  double lo = full.min, hi = full.max;
  double best = quantization_error(h, lo, hi);
  // First shrink both ends together, then refine each end alone (two rounds of coordinate descent).
  auto search = [&](bool move_lo, bool move_hi) {
    const double base_lo = lo, base_hi = hi;
    for (int k = 0; k <= kSteps; ++k) {
      const double t = std::exp2(-static_cast<double>(k) / 16.0);
      const double cand_lo = move_lo ? full.min * t : base_lo;
      const double cand_hi = move_hi ? full.max * t : base_hi;
      if (cand_hi - cand_lo <= 0) continue;
      const double e = quantization_error(h, cand_lo, cand_hi);
      if (e < best) best = e, lo = cand_lo, hi = cand_hi;
    }
  };
  search(true, true);
  for (int round = 0; round < 2; ++round) {
    search(true, false);
    search(false, true);
  }
  return {static_cast<float>(lo), static_cast<float>(hi)};
}

Range calibrated_range(const TensorObserver& observer, RangeMethod method, double percentile) {
  switch (method) {
    case RangeMethod::minmax: return minmax_range(observer);
    case RangeMethod::percentile: return percentile_range(observer, percentile);
    case RangeMethod::mse: return mse_range(observer);
  }
  return minmax_range(observer);
}

AffineParams int8_activation_params(Range range) {
  const Range r = include_zero(range);
  const double width = static_cast<double>(r.max) - static_cast<double>(r.min);
  // A tensor that is always zero: any positive scale represents it; keep zero at -128 like a ReLU output.
  if (!(width > 0)) return {1.0f / 255.0f, -128};
  const float scale = static_cast<float>(width / 255.0);
  const double zp = std::round(-128.0 - static_cast<double>(r.min) / static_cast<double>(scale));
  return {scale, static_cast<int32_t>(std::clamp(zp, -128.0, 127.0))};
}

}  // namespace tflite_plugin
