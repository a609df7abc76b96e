#include "resize.hpp"

#include "image_layout.hpp"

#include <algorithm>
#include <cmath>

namespace stock_transforms {
namespace {

// One output coordinate's two source neighbours and the weight of the upper one, as TensorFlow's
// compute_interpolation_weights with HalfPixelScaler: in = (out + 0.5) * scale - 0.5, neighbours clamped to the
// image, weight = in - floor(in).
struct Tap {
  int64_t lower, upper;
  float weight;
};

inline Tap tap(int64_t out, float scale, int64_t in_size) {
  const float in = (static_cast<float>(out) + 0.5f) * scale - 0.5f;
  const float floor_in = std::floor(in);
  return {std::max<int64_t>(static_cast<int64_t>(floor_in), 0),
          std::min<int64_t>(static_cast<int64_t>(std::ceil(in)), in_size - 1), in - floor_in};
}

template <class T>
void resize_into(const T* x, int64_t in_h, int64_t in_w, int64_t channels, float* y, int64_t out_h, int64_t out_w) {
  const float scale_y = static_cast<float>(in_h) / static_cast<float>(out_h);
  const float scale_x = static_cast<float>(in_w) / static_cast<float>(out_w);
  std::vector<Tap> xs(static_cast<size_t>(out_w));
  for (int64_t ox = 0; ox < out_w; ++ox) xs[static_cast<size_t>(ox)] = tap(ox, scale_x, in_w);
  for (int64_t oy = 0; oy < out_h; ++oy) {
    const Tap ty = tap(oy, scale_y, in_h);
    const T* top = x + ty.lower * in_w * channels;
    const T* bottom = x + ty.upper * in_w * channels;
    float* row = y + oy * out_w * channels;
    for (int64_t ox = 0; ox < out_w; ++ox) {
      const Tap& tx = xs[static_cast<size_t>(ox)];
      const int64_t l = tx.lower * channels, r = tx.upper * channels;
      for (int64_t c = 0; c < channels; ++c) {
        const float tl = static_cast<float>(top[l + c]), tr = static_cast<float>(top[r + c]);
        const float bl = static_cast<float>(bottom[l + c]), br = static_cast<float>(bottom[r + c]);
        const float t = tl + (tr - tl) * tx.weight;
        const float b = bl + (br - bl) * tx.weight;
        row[ox * channels + c] = t + (b - t) * ty.weight;
      }
    }
  }
}

}  // namespace

ramjet::Fields Resize::fields() {
  using ramjet::Field;
  return {Field::string("key").fallback("image"),
          Field::array("size").required().rule([](const nlohmann::json& v) -> std::optional<std::string> {
            if (v.size() != 2 || !v[0].is_number_integer() || !v[1].is_number_integer() || v[0].get<int64_t>() <= 0 ||
                v[1].get<int64_t>() <= 0)
              return "must be [height, width], both positive integers, got " + ramjet::quote_value(v);
            return std::nullopt;
          })};
}

// create() has checked the configuration against fields(); here it is only read.
Resize::Resize(const ramjet::Config& config) {
  const nlohmann::json c = fields().with_defaults(config.json());
  key_ = c.at("key").get<std::string>();
  height_ = c.at("size")[0].get<int64_t>();
  width_ = c.at("size")[1].get<int64_t>();
}

void Resize::apply(ramjet::Example& example, uint64_t) const {
  DLTensor& in = example.get(key_);
  require_contiguous_cpu(in, key_);
  const ImageDims d = image_dims(in, key_);
  if (d.height == 0 || d.width == 0)
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "resize: tensor '" + key_ + "' is an empty image");
  std::vector<int64_t> shape(in.shape, in.shape + in.ndim);
  shape[0] = height_;
  shape[1] = width_;
  ramjet::Tensor out = ramjet::Tensor::zeros(ramjet::dtype_of<float>(), shape);
  float* y = out.data<float>();
  visit_numeric(in, key_, [&](const auto* x) { resize_into(x, d.height, d.width, d.channels, y, height_, width_); });
  example.set(key_, std::move(out));
}

}  // namespace stock_transforms
