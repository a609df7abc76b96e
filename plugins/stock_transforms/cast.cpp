#include "cast.hpp"

#include "image_layout.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace stock_transforms {
namespace {

template <class To, class From>
To convert(From v) {
  if constexpr (std::is_integral_v<To>) {
    const double d = std::nearbyint(static_cast<double>(v));
    return static_cast<To>(std::clamp(d, static_cast<double>(std::numeric_limits<To>::min()),
                                      static_cast<double>(std::numeric_limits<To>::max())));
  } else {
    return static_cast<To>(v);
  }
}

template <class To>
void cast_into(DLTensor& in, const std::string& key, ramjet::Tensor& out) {
  To* y = out.data<To>();
  const int64_t n = ramjet::element_count(in);
  visit_numeric(in, key, [&](const auto* x) {
    for (int64_t i = 0; i < n; ++i) y[i] = convert<To>(x[i]);
  });
}

}  // namespace

ramjet::Fields Cast::fields() {
  using ramjet::Field;
  return {Field::string("key").fallback("image"),
          Field::string("dtype").required().one_of({"float32", "float64", "int32", "uint8"})};
}

// create() has checked the configuration against fields(); here it is only read.
Cast::Cast(const ramjet::Config& config) {
  const nlohmann::json c = fields().with_defaults(config.json());
  key_ = c.at("key").get<std::string>();
  ramjet::parse_dtype(c.at("dtype").get<std::string>(), dtype_);
}

void Cast::apply(ramjet::Example& example, uint64_t) const {
  DLTensor& in = example.get(key_);
  if (ramjet::same_dtype(in.dtype, dtype_)) return;
  require_contiguous_cpu(in, key_);
  ramjet::Tensor out = ramjet::Tensor::zeros(dtype_, std::span<const int64_t>(in.shape, static_cast<size_t>(in.ndim)));
  if (ramjet::same_dtype(dtype_, ramjet::dtype_of<float>())) cast_into<float>(in, key_, out);
  else if (ramjet::same_dtype(dtype_, ramjet::dtype_of<double>())) cast_into<double>(in, key_, out);
  else if (ramjet::same_dtype(dtype_, ramjet::dtype_of<int32_t>())) cast_into<int32_t>(in, key_, out);
  else cast_into<uint8_t>(in, key_, out);
  example.set(key_, std::move(out));
}

}  // namespace stock_transforms
