#include "noise.hpp"

#include "image_layout.hpp"

#include <algorithm>
#include <cmath>

namespace stock_transforms {
namespace {

const char* const kGaussianOnly[] = {"stddev", "mean"};
const char* const kSaltAndPepperOnly[] = {"amount", "salt_vs_pepper"};

}  // namespace

ramjet::Fields Noise::fields() {
  using ramjet::Field;
  return {Field::string("key").fallback("image"),
          Field::string("kind").required().one_of({"gaussian", "salt_and_pepper"}),
          Field::number("stddev").at_least(0).doc("gaussian: required"),
          Field::number("mean").doc("gaussian: 0 when absent"),
          Field::number("amount").at_least(0).at_most(1).doc("salt_and_pepper: required; the share of values hit"),
          Field::number("salt_vs_pepper").at_least(0).at_most(1).doc("salt_and_pepper: 0.5 when absent"),
          Field::array("clip").rule([](const nlohmann::json& v) -> std::optional<std::string> {
            if (v.size() != 2 || !v[0].is_number() || !v[1].is_number() || !std::isfinite(v[0].get<double>()) ||
                !std::isfinite(v[1].get<double>()) || !(v[0].get<double>() <= v[1].get<double>()))
              return "must be [low, high], two finite numbers with low <= high, got " + ramjet::quote_value(v);
            return std::nullopt;
          })};
}

void Noise::check(const nlohmann::json& config, ramjet::Problems& problems) {
  const bool gaussian = config.at("kind") == "gaussian";
  const char* needed = gaussian ? "stddev" : "amount";
  if (!config.contains(needed))
    problems.push_back({std::string("/") + needed, std::string("required field is missing (kind ") +
                                                       config.at("kind").dump() + " needs it)"});
  for (const char* other : gaussian ? kSaltAndPepperOnly : kGaussianOnly)
    if (config.contains(other))
      problems.push_back({std::string("/") + other, "does not apply to kind " + config.at("kind").dump()});
}

// create() has checked the configuration against fields() and check(); here it is only read.
Noise::Noise(const ramjet::Config& config) {
  const nlohmann::json& c = config.json();
  key_ = c.value("key", std::string("image"));
  gaussian_ = c.at("kind") == "gaussian";
  if (gaussian_) {
    stddev_ = c.at("stddev").get<double>();
    mean_ = c.value("mean", 0.0);
  } else {
    amount_ = c.at("amount").get<double>();
    salt_vs_pepper_ = c.value("salt_vs_pepper", 0.5);
  }
  if (c.contains("clip")) clip_.emplace(c.at("clip")[0].get<double>(), c.at("clip")[1].get<double>());
}

template <class T>
void Noise::add_noise(T* x, int64_t n, uint64_t seed) const {
  constexpr bool u8 = std::is_same_v<T, uint8_t>;
  double low = u8 ? 0.0 : -HUGE_VAL, high = u8 ? 255.0 : HUGE_VAL;
  if (clip_) low = std::max(low, clip_->first), high = std::min(high, clip_->second);
  const auto store = [&](T& out, double v) {
    v = std::clamp(v, low, high);
    out = u8 ? static_cast<T>(std::nearbyint(v)) : static_cast<T>(v);
  };
  ramjet::SeededRandom rng(seed);
  if (gaussian_) {
    const float stddev = static_cast<float>(stddev_), mean = static_cast<float>(mean_);
    for (int64_t i = 0; i < n; ++i) store(x[i], static_cast<double>(x[i]) + rng.normal(mean, stddev));
    return;
  }
  const double salt = clip_ ? clip_->second : (u8 ? 255.0 : 1.0);
  const double pepper = clip_ ? clip_->first : 0.0;
  for (int64_t i = 0; i < n; ++i)
    if (rng.bernoulli(amount_)) store(x[i], rng.bernoulli(salt_vs_pepper_) ? salt : pepper);
    else if (clip_) store(x[i], static_cast<double>(x[i]));
}

void Noise::apply(ramjet::Example& example, uint64_t seed) const {
  DLTensor& t = example.get(key_);
  require_contiguous_cpu(t, key_);
  const int64_t n = ramjet::element_count(t);
  if (ramjet::same_dtype(t.dtype, ramjet::dtype_of<uint8_t>())) return add_noise(ramjet::data_as<uint8_t>(t), n, seed);
  if (ramjet::same_dtype(t.dtype, ramjet::dtype_of<float>())) return add_noise(ramjet::data_as<float>(t), n, seed);
  throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "noise: tensor '" + key_ + "' has dtype " +
                                                       ramjet::dtype_name(t.dtype) + "; it needs uint8 or float32");
}

}  // namespace stock_transforms
