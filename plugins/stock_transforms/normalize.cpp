#include "normalize.hpp"

#include "image_layout.hpp"

namespace stock_transforms {
namespace {

std::vector<float> per_channel(const ramjet::Config& config, const char* key, float fallback) {
  if (!config.has(key)) return {fallback};
  const auto& v = config.json().at(key);
  std::vector<float> values;
  if (v.is_number()) values.push_back(v.get<float>());
  else if (v.is_array() && !v.empty() && std::all_of(v.begin(), v.end(), [](const auto& x) { return x.is_number(); }))
    values = v.get<std::vector<float>>();
  else
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, config.where(key) + ": must be a number or an array of numbers");
  return values;
}

}  // namespace

Normalize::Normalize(const ramjet::Config& config)
    : key_(config.get_or<std::string>("key", "image")), scale_(config.get_or("scale", 1.0f)),
      mean_(per_channel(config, "mean", 0.0f)) {
  for (float s : per_channel(config, "std", 1.0f)) {
    if (!(s > 0.0f)) throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, config.where("std") + ": must be positive");
    inv_std_.push_back(1.0f / s);
  }
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
  std::vector<int64_t> shape(in.shape, in.shape + in.ndim);
  ramjet::Tensor out = ramjet::Tensor::zeros(ramjet::dtype_of<float>(), shape);
  float* y = out.data<float>();
  const int64_t n = ramjet::element_count(in);
  visit_numeric(in, key_, [&](const auto* x) {
    for (int64_t i = 0; i < n; ++i) {
      const size_t c = static_cast<size_t>(i) % channels;
      const float mean = mean_.size() == 1 ? mean_[0] : mean_[c];
      const float inv = inv_std_.size() == 1 ? inv_std_[0] : inv_std_[c];
      y[i] = (static_cast<float>(x[i]) * scale_ - mean) * inv;
    }
  });
  example.set(key_, std::move(out));
}

}  // namespace stock_transforms
