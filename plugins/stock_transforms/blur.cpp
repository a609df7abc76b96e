#include "blur.hpp"

#include "image_layout.hpp"

#include <algorithm>
#include <cmath>

namespace stock_transforms {
namespace {

// Index i (possibly outside [0, n)) reflected into the image without repeating the edge: -1 -> 1, n -> n - 2.
// Kernels wider than the image reflect again (the pattern has period 2(n-1)).
int64_t reflect_101(int64_t i, int64_t n) {
  if (n == 1) return 0;
  const int64_t period = 2 * (n - 1);
  i %= period;
  if (i < 0) i += period;
  return i < n ? i : period - i;
}

// One separable pass along an axis of `count` positions whose neighbours are `stride` values apart.
// in and out are [lines][count][channels] views described by the strides; the sums are in float.
void blur_pass(const float* in, float* out, int64_t lines, int64_t line_stride, int64_t count, int64_t stride,
               int64_t channels, const std::vector<float>& kernel) {
  const int64_t radius = static_cast<int64_t>(kernel.size() / 2);
  std::vector<int64_t> taps(static_cast<size_t>(count) * kernel.size());
  for (int64_t p = 0; p < count; ++p)
    for (int64_t k = -radius; k <= radius; ++k)
      taps[static_cast<size_t>(p) * kernel.size() + static_cast<size_t>(k + radius)] = reflect_101(p + k, count) * stride;
  for (int64_t l = 0; l < lines; ++l) {
    const float* src = in + l * line_stride;
    float* dst = out + l * line_stride;
    for (int64_t p = 0; p < count; ++p) {
      const int64_t* tap = &taps[static_cast<size_t>(p) * kernel.size()];
      for (int64_t c = 0; c < channels; ++c) {
        float sum = 0.0f;
        for (size_t k = 0; k < kernel.size(); ++k) sum += kernel[k] * src[tap[k] + c];
        dst[p * stride + c] = sum;
      }
    }
  }
}

}  // namespace

ramjet::Fields Blur::fields() {
  using ramjet::Field;
  return {Field::string("key").fallback("image"), Field::string("kind").required().one_of({"box", "gaussian"}),
          Field::integer("size").required().at_least(1).rule([](const nlohmann::json& v) -> std::optional<std::string> {
            if (v.get<int64_t>() % 2 == 0) return "must be odd (the kernel is centred on the pixel), got " + v.dump();
            return std::nullopt;
          }),
          Field::number("sigma").above(0).doc("gaussian only; absent: 0.3*((size-1)*0.5-1)+0.8, as cv2")};
}

void Blur::check(const nlohmann::json& config, ramjet::Problems& problems) {
  if (config.contains("sigma") && config.at("kind") == "box")
    problems.push_back({"/sigma", "applies only to kind \"gaussian\"; a box blur has no sigma"});
}

// create() has checked the configuration against fields() and check(); here it is only read.
Blur::Blur(const ramjet::Config& config) {
  const nlohmann::json c = fields().with_defaults(config.json());
  key_ = c.at("key").get<std::string>();
  const int64_t size = c.at("size").get<int64_t>();
  kernel_.assign(static_cast<size_t>(size), 1.0f / static_cast<float>(size));
  if (c.at("kind") == "gaussian") {
    const double sigma = c.contains("sigma") ? c.at("sigma").get<double>() : 0.3 * ((size - 1) * 0.5 - 1) + 0.8;
    std::vector<double> w(static_cast<size_t>(size));
    double total = 0;
    for (int64_t i = 0; i < size; ++i) {
      const double x = static_cast<double>(i) - static_cast<double>(size - 1) / 2;
      total += w[static_cast<size_t>(i)] = std::exp(-x * x / (2 * sigma * sigma));
    }
    for (int64_t i = 0; i < size; ++i) kernel_[static_cast<size_t>(i)] = static_cast<float>(w[static_cast<size_t>(i)] / total);
  }
}

void Blur::apply(ramjet::Example& example, uint64_t) const {
  DLTensor& t = example.get(key_);
  require_contiguous_cpu(t, key_);
  const ImageDims d = image_dims(t, key_);
  const bool u8 = ramjet::same_dtype(t.dtype, ramjet::dtype_of<uint8_t>());
  if (!u8 && !ramjet::same_dtype(t.dtype, ramjet::dtype_of<float>()))
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "blur: tensor '" + key_ + "' has dtype " +
                                                         ramjet::dtype_name(t.dtype) + "; it needs uint8 or float32");
  const int64_t n = d.height * d.width * d.channels;
  if (n == 0 || kernel_.size() == 1) return;
  std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
  if (u8) std::copy_n(ramjet::data_as<uint8_t>(t), n, a.begin());
  else std::copy_n(ramjet::data_as<float>(t), n, a.begin());
  // Along each row (neighbours one pixel apart), then down each column (neighbours one row apart).
  blur_pass(a.data(), b.data(), d.height, d.width * d.channels, d.width, d.channels, d.channels, kernel_);
  blur_pass(b.data(), a.data(), d.width, d.channels, d.height, d.width * d.channels, d.channels, kernel_);
  if (u8) {
    uint8_t* y = ramjet::data_as<uint8_t>(t);
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<uint8_t>(std::clamp(std::nearbyint(a[static_cast<size_t>(i)]), 0.0f, 255.0f));
  } else {
    std::copy_n(a.begin(), n, ramjet::data_as<float>(t));
  }
}

}  // namespace stock_transforms
