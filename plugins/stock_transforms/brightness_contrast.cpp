#include "brightness_contrast.hpp"

#include "image_layout.hpp"

#include <array>
#include <cmath>

namespace stock_transforms {
namespace {

float* float_image(ramjet::Example& example, const std::string& key, const char* transform) {
  DLTensor& t = example.get(key);
  require_contiguous_cpu(t, key);
  if (!ramjet::same_dtype(t.dtype, ramjet::dtype_of<float>()))
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, std::string(transform) + ": tensor '" + key + "' has dtype " +
                                                         ramjet::dtype_name(t.dtype) +
                                                         "; it needs float32 (put normalize or cast before it)");
  return ramjet::data_as<float>(t);
}

}  // namespace

ramjet::Fields RandomBrightness::fields() {
  using ramjet::Field;
  return {Field::string("key").fallback("image"), Field::number("max_delta").required().at_least(0)};
}

// create() has checked the configuration against fields(); here it is only read.
RandomBrightness::RandomBrightness(const ramjet::Config& config) {
  const nlohmann::json c = fields().with_defaults(config.json());
  key_ = c.at("key").get<std::string>();
  max_delta_ = c.at("max_delta");
}

void RandomBrightness::apply(ramjet::Example& example, uint64_t seed) const {
  float* x = float_image(example, key_, "random_brightness");
  const int64_t n = ramjet::element_count(example.get(key_));
  ramjet::SeededRandom rng(seed);
  const float delta = static_cast<float>(rng.uniform(-max_delta_, max_delta_));
  for (int64_t i = 0; i < n; ++i) x[i] += delta;
}

ramjet::Fields RandomContrast::fields() {
  using ramjet::Field;
  return {Field::string("key").fallback("image"), Field::number("lower").required().at_least(0),
          Field::number("upper").required()};
}

void RandomContrast::check(const nlohmann::json& config, ramjet::Problems& problems) {
  if (config.at("upper").get<double>() < config.at("lower").get<double>())
    problems.push_back({"/upper", "must be >= lower (" + config.at("lower").dump() + "), got " + config.at("upper").dump()});
}

// create() has checked the configuration against fields() and check(); here it is only read.
RandomContrast::RandomContrast(const ramjet::Config& config) {
  const nlohmann::json c = fields().with_defaults(config.json());
  key_ = c.at("key").get<std::string>();
  lower_ = c.at("lower");
  upper_ = c.at("upper");
}

void RandomContrast::apply(ramjet::Example& example, uint64_t seed) const {
  float* x = float_image(example, key_, "random_contrast");
  const ImageDims d = image_dims(example.get(key_), key_);
  const int64_t pixels = d.height * d.width, channels = d.channels;
  if (pixels == 0) return;
  ramjet::SeededRandom rng(seed);
  const float factor = static_cast<float>(rng.uniform(lower_, upper_));

  // Channel means, summed in double over kLanes independent accumulators per channel so the adds do not wait on
  // each other (one serial chain over a 28x28 image costs more than everything else here).
  constexpr int64_t kLanes = 4, kStackChannels = 8;
  std::array<double, kLanes * kStackChannels> stack_acc{};
  std::vector<double> heap_acc(channels > kStackChannels ? static_cast<size_t>(kLanes * channels) : 0);
  double* acc = channels > kStackChannels ? heap_acc.data() : stack_acc.data();
  const int64_t n = pixels * channels, step = kLanes * channels;
  int64_t i = 0;
  for (; i + step <= n; i += step)
    for (int64_t k = 0; k < step; ++k) acc[k] += x[i + k];
  for (; i < n; ++i) acc[i % channels] += x[i];  // the tail starts on a pixel boundary
  std::array<float, kStackChannels> stack_mean{};
  std::vector<float> heap_mean(channels > kStackChannels ? static_cast<size_t>(channels) : 0);
  float* mean = channels > kStackChannels ? heap_mean.data() : stack_mean.data();
  for (int64_t c = 0; c < channels; ++c) {
    double sum = 0;
    for (int64_t l = 0; l < kLanes; ++l) sum += acc[l * channels + c];
    mean[c] = static_cast<float>(sum / static_cast<double>(pixels));
  }

  if (channels == 1) {  // the common grayscale case, as one flat loop the compiler vectorises
    const float m = mean[0];
    for (int64_t j = 0; j < n; ++j) x[j] = (x[j] - m) * factor + m;
    return;
  }
  for (int64_t p = 0; p < pixels; ++p)
    for (int64_t c = 0; c < channels; ++c) {
      float& v = x[p * channels + c];
      v = (v - mean[c]) * factor + mean[c];
    }
}

}  // namespace stock_transforms
