#include "random_crop.hpp"

#include "image_layout.hpp"

#include <cstring>

namespace stock_transforms {

ramjet::Fields RandomCrop::fields() {
  using ramjet::Field;
  return {Field::string("key").fallback("image"),
          Field::any("size").required().rule([](const nlohmann::json& v) -> std::optional<std::string> {
            const bool shaped = v.is_number_integer() || (v.is_array() && v.size() == 2 && v[0].is_number_integer() &&
                                                          v[1].is_number_integer());
            if (!shaped) return "must be an integer or an array [height, width], got " + ramjet::quote_value(v);
            for (const auto& d : v.is_array() ? v : nlohmann::json::array({v}))
              if (d.get<int64_t>() <= 0) return "must be positive, got " + ramjet::quote_value(v);
            return std::nullopt;
          }),
          Field::integer("padding").at_least(0).fallback(0)};
}

// create() has checked the configuration against fields(); here it is only read.
RandomCrop::RandomCrop(const ramjet::Config& config) {
  const nlohmann::json c = fields().with_defaults(config.json());
  key_ = c.at("key").get<std::string>();
  padding_ = c.at("padding").get<int64_t>();
  const nlohmann::json& size = c.at("size");
  height_ = size.is_array() ? size[0].get<int64_t>() : size.get<int64_t>();
  width_ = size.is_array() ? size[1].get<int64_t>() : size.get<int64_t>();
}

void RandomCrop::apply(ramjet::Example& example, uint64_t seed) const {
  DLTensor& in = example.get(key_);
  require_contiguous_cpu(in, key_);
  const ImageDims d = image_dims(in, key_);
  const int64_t padded_h = d.height + 2 * padding_, padded_w = d.width + 2 * padding_;
  if (height_ > padded_h || width_ > padded_w)
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT,
                        "random_crop: cannot cut " + std::to_string(height_) + "x" + std::to_string(width_) +
                            " from '" + key_ + "', which is " + std::to_string(d.height) + "x" +
                            std::to_string(d.width) + " padded by " + std::to_string(padding_));
  ramjet::SeededRandom rng(seed);
  // Window origin in padded coordinates; (top, left) of the window relative to the unpadded image.
  const int64_t top = rng.integer(0, padded_h - height_ + 1) - padding_;
  const int64_t left = rng.integer(0, padded_w - width_ + 1) - padding_;

  std::vector<int64_t> shape(in.shape, in.shape + in.ndim);
  shape[0] = height_;
  shape[1] = width_;
  ramjet::Tensor out = ramjet::Tensor::zeros(in.dtype, shape);
  const size_t pixel = static_cast<size_t>(d.channels) * ramjet::dtype_bytes(in.dtype);
  const auto* src = static_cast<const uint8_t*>(in.data) + in.byte_offset;
  auto* dst = static_cast<uint8_t*>(out.dl().data);
  // Columns of the window that fall on the image; the rest stay zero (the padding).
  const int64_t x0 = std::max<int64_t>(0, -left), x1 = std::min<int64_t>(width_, d.width - left);
  if (x1 > x0) {
    const size_t bytes = static_cast<size_t>(x1 - x0) * pixel;
    for (int64_t y = 0; y < height_; ++y) {
      const int64_t sy = top + y;
      if (sy < 0 || sy >= d.height) continue;
      std::memcpy(dst + (static_cast<size_t>(y * width_ + x0)) * pixel,
                  src + (static_cast<size_t>(sy * d.width + left + x0)) * pixel, bytes);
    }
  }
  example.set(key_, std::move(out));
}

}  // namespace stock_transforms
