#include "random_flip.hpp"

#include "image_layout.hpp"

#include <algorithm>
#include <cstring>

namespace stock_transforms {

ramjet::Fields RandomFlip::fields() {
  using ramjet::Field;
  return {Field::string("key").fallback("image"), Field::boolean("horizontal").fallback(true),
          Field::boolean("vertical").fallback(false), Field::number("probability").at_least(0).at_most(1).fallback(0.5)};
}

// create() has checked the configuration against fields(); here it is only read.
RandomFlip::RandomFlip(const ramjet::Config& config) {
  const nlohmann::json c = fields().with_defaults(config.json());
  key_ = c.at("key").get<std::string>();
  horizontal_ = c.at("horizontal");
  vertical_ = c.at("vertical");
  probability_ = c.at("probability");
}

void RandomFlip::apply(ramjet::Example& example, uint64_t seed) const {
  ramjet::SeededRandom rng(seed);
  const bool flip_h = horizontal_ && rng.bernoulli(probability_);
  const bool flip_v = vertical_ && rng.bernoulli(probability_);
  if (!flip_h && !flip_v) return;
  DLTensor& t = example.get(key_);
  require_contiguous_cpu(t, key_);
  const ImageDims d = image_dims(t, key_);
  const size_t pixel = static_cast<size_t>(d.channels) * ramjet::dtype_bytes(t.dtype);
  const size_t row = pixel * static_cast<size_t>(d.width);
  auto* base = static_cast<uint8_t*>(t.data) + t.byte_offset;
  if (flip_h) {
    // Reverse each row pixel by pixel; the common pixel sizes get a typed reverse the compiler vectorises.
    auto reverse_rows = [&](auto pixel_type) {
      using P = decltype(pixel_type);
      for (int64_t y = 0; y < d.height; ++y) {
        P* r = reinterpret_cast<P*>(base + static_cast<size_t>(y) * row);
        std::reverse(r, r + d.width);
      }
    };
    if (pixel == 1) reverse_rows(uint8_t{});
    else if (pixel == 2) reverse_rows(uint16_t{});
    else if (pixel == 4) reverse_rows(uint32_t{});
    else if (pixel == 8) reverse_rows(uint64_t{});
    else
      for (int64_t y = 0; y < d.height; ++y) {
        uint8_t* r = base + static_cast<size_t>(y) * row;
        for (int64_t a = 0, b = d.width - 1; a < b; ++a, --b)
          std::swap_ranges(r + a * pixel, r + (a + 1) * pixel, r + b * pixel);
      }
  }
  if (flip_v) {
    std::vector<uint8_t> scratch(row);
    for (int64_t a = 0, b = d.height - 1; a < b; ++a, --b) {
      std::memcpy(scratch.data(), base + a * row, row);
      std::memcpy(base + a * row, base + b * row, row);
      std::memcpy(base + b * row, scratch.data(), row);
    }
  }
}

}  // namespace stock_transforms
