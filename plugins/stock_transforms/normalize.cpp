#include "normalize.hpp"

#include "image_layout.hpp"

#include <algorithm>

namespace stock_transforms {
namespace {

// A number or a non-empty array of numbers (one per channel), each `positive` if asked.
ramjet::Field per_channel_field(const char* name, double fallback, bool positive) {
  return ramjet::Field::any(name).fallback(fallback).rule([positive](const nlohmann::json& v) -> std::optional<std::string> {
    const bool numbers = v.is_number() || (v.is_array() && !v.empty() &&
                                           std::all_of(v.begin(), v.end(), [](const auto& x) { return x.is_number(); }));
    if (!numbers) return "must be a number or an array of numbers, got " + ramjet::quote_value(v);
    if (positive)
      for (const auto& x : v.is_array() ? v : nlohmann::json::array({v}))
        if (!(x.get<float>() > 0.0f)) return "must be positive, got " + ramjet::quote_value(v);
    return std::nullopt;
  });
}

std::vector<float> per_channel(const nlohmann::json& v) {
  return v.is_number() ? std::vector<float>{v.get<float>()} : v.get<std::vector<float>>();
}

// y = x * a[c] + b[c], with a = scale / std and b = -mean / std folded per channel. The single-channel loop has
// no index arithmetic, so the compiler vectorises the conversion and the multiply-add.
template <class T>
void affine(const T* __restrict x, float* __restrict y, int64_t n, const float* a, const float* b, size_t channels) {
  if (channels == 1) {
    const float a0 = a[0], b0 = b[0];
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(x[i]) * a0 + b0;
    return;
  }
  for (int64_t p = 0; p < n; p += static_cast<int64_t>(channels))
    for (size_t c = 0; c < channels; ++c) y[p + static_cast<int64_t>(c)] = static_cast<float>(x[p + static_cast<int64_t>(c)]) * a[c] + b[c];
}

}  // namespace

ramjet::Fields Normalize::fields() {
  using ramjet::Field;
  return {Field::string("key").fallback("image"), Field::number("scale").fallback(1.0),
          per_channel_field("mean", 0.0, false), per_channel_field("std", 1.0, true)};
}

// create() has checked the configuration against fields(); here it is only read.
Normalize::Normalize(const ramjet::Config& config) {
  const nlohmann::json c = fields().with_defaults(config.json());
  key_ = c.at("key").get<std::string>();
  scale_ = c.at("scale").get<float>();
  mean_ = per_channel(c.at("mean"));
  for (float s : per_channel(c.at("std"))) inv_std_.push_back(1.0f / s);
}

void Normalize::apply(ramjet::Example& example, uint64_t) const {
  DLTensor& in = example.get(key_);
  require_contiguous_cpu(in, key_);
  const ImageDims dims = image_dims(in, key_);
  const size_t channels = static_cast<size_t>(dims.channels);
  for (const auto* v : {&mean_, &inv_std_})
    if (v->size() != 1 && v->size() != channels)
      throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "normalize: " + std::to_string(v->size()) +
                                                           " per-channel values for an image with " +
                                                           std::to_string(channels) + " channels");
  // Fold (x * scale - mean) / std into one multiply-add per value.
  const size_t folded = std::max(mean_.size(), inv_std_.size());
  float a[64], b[64];
  if (folded > 64) throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, "normalize: more than 64 channels");
  for (size_t c = 0; c < folded; ++c) {
    const float mean = mean_.size() == 1 ? mean_[0] : mean_[c];
    const float inv = inv_std_.size() == 1 ? inv_std_[0] : inv_std_[c];
    a[c] = scale_ * inv;
    b[c] = -mean * inv;
  }
  const size_t groups = folded == 1 ? 1 : channels;
  std::vector<int64_t> shape(in.shape, in.shape + in.ndim);
  ramjet::Tensor out = ramjet::Tensor::zeros(ramjet::dtype_of<float>(), shape);
  float* y = out.data<float>();
  const int64_t n = ramjet::element_count(in);
  visit_numeric(in, key_, [&](const auto* x) { affine(x, y, n, a, b, groups); });
  example.set(key_, std::move(out));
}

}  // namespace stock_transforms
