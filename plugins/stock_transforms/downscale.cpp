#include "downscale.hpp"

#include "image_layout.hpp"

#include <algorithm>
#include <cmath>

namespace stock_transforms {
namespace {

template <class T>
void area_average(const T* x, int64_t height, int64_t width, int64_t channels, int64_t factor, float* y) {
  const int64_t out_h = height / factor, out_w = width / factor;
  const double area = static_cast<double>(factor * factor);
  std::vector<double> sums(static_cast<size_t>(out_w * channels));
  for (int64_t oy = 0; oy < out_h; ++oy) {
    std::fill(sums.begin(), sums.end(), 0.0);
    for (int64_t dy = 0; dy < factor; ++dy) {
      const T* row = x + (oy * factor + dy) * width * channels;
      for (int64_t ix = 0; ix < out_w * factor; ++ix)
        for (int64_t c = 0; c < channels; ++c)
          sums[static_cast<size_t>((ix / factor) * channels + c)] += static_cast<double>(row[ix * channels + c]);
    }
    for (int64_t i = 0; i < out_w * channels; ++i)
      y[oy * out_w * channels + i] = static_cast<float>(sums[static_cast<size_t>(i)] / area);
  }
}

// The two source neighbours of output coordinate `out` and the weight of the upper one, half-pixel centres:
// in = (out + 0.5) / factor - 0.5, clamped to the image.
struct Tap {
  int64_t lower, upper;
  float weight;
};
Tap tap(int64_t out, int64_t factor, int64_t in_size) {
  const double in = (static_cast<double>(out) + 0.5) / static_cast<double>(factor) - 0.5;
  const double floor_in = std::floor(in);
  return {std::clamp<int64_t>(static_cast<int64_t>(floor_in), 0, in_size - 1),
          std::clamp<int64_t>(static_cast<int64_t>(floor_in) + 1, 0, in_size - 1), static_cast<float>(in - floor_in)};
}

void upscale(const float* x, int64_t in_h, int64_t in_w, int64_t channels, int64_t factor, bool bilinear, float* y) {
  const int64_t out_h = in_h * factor, out_w = in_w * factor;
  std::vector<Tap> xs(static_cast<size_t>(out_w));
  for (int64_t ox = 0; ox < out_w; ++ox)
    xs[static_cast<size_t>(ox)] = bilinear ? tap(ox, factor, in_w) : Tap{ox / factor, ox / factor, 0.0f};
  for (int64_t oy = 0; oy < out_h; ++oy) {
    const Tap ty = bilinear ? tap(oy, factor, in_h) : Tap{oy / factor, oy / factor, 0.0f};
    const float* top = x + ty.lower * in_w * channels;
    const float* bottom = x + ty.upper * in_w * channels;
    float* row = y + oy * out_w * channels;
    for (int64_t ox = 0; ox < out_w; ++ox) {
      const Tap& tx = xs[static_cast<size_t>(ox)];
      const int64_t l = tx.lower * channels, r = tx.upper * channels;
      for (int64_t c = 0; c < channels; ++c) {
        const float t = top[l + c] + (top[r + c] - top[l + c]) * tx.weight;
        const float b = bottom[l + c] + (bottom[r + c] - bottom[l + c]) * tx.weight;
        row[ox * channels + c] = t + (b - t) * ty.weight;
      }
    }
  }
}

}  // namespace

ramjet::Fields Downscale::fields() {
  using ramjet::Field;
  return {Field::string("key").fallback("image"), Field::integer("factor").required().at_least(1),
          Field::string("restore").one_of({"none", "nearest", "bilinear"}).fallback("none")};
}

// create() has checked the configuration against fields(); here it is only read.
Downscale::Downscale(const ramjet::Config& config) {
  const nlohmann::json c = fields().with_defaults(config.json());
  key_ = c.at("key").get<std::string>();
  factor_ = c.at("factor").get<int64_t>();
  restore_ = c.at("restore").get<std::string>();
}

void Downscale::apply(ramjet::Example& example, uint64_t) const {
  DLTensor& in = example.get(key_);
  require_contiguous_cpu(in, key_);
  const ImageDims d = image_dims(in, key_);
  if (d.height % factor_ != 0 || d.width % factor_ != 0 || d.height == 0 || d.width == 0)
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT,
                        "downscale: tensor '" + key_ + "' is " + std::to_string(d.height) + "x" +
                            std::to_string(d.width) + ", not a non-empty multiple of factor " +
                            std::to_string(factor_) + " on both sides (put random_crop or resize before it)");
  const int64_t small_h = d.height / factor_, small_w = d.width / factor_;
  std::vector<int64_t> shape(in.shape, in.shape + in.ndim);
  shape[0] = small_h;
  shape[1] = small_w;
  ramjet::Tensor small = ramjet::Tensor::zeros(ramjet::dtype_of<float>(), shape);
  visit_numeric(in, key_, [&](const auto* x) {
    area_average(x, d.height, d.width, d.channels, factor_, small.data<float>());
  });
  if (restore_ == "none") return example.set(key_, std::move(small));
  shape[0] = d.height;
  shape[1] = d.width;
  ramjet::Tensor out = ramjet::Tensor::zeros(ramjet::dtype_of<float>(), shape);
  upscale(small.data<float>(), small_h, small_w, d.channels, factor_, restore_ == "bilinear", out.data<float>());
  example.set(key_, std::move(out));
}

}  // namespace stock_transforms
