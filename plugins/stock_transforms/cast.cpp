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

Cast::Cast(const ramjet::Config& config) : key_(config.get_or<std::string>("key", "image")) {
  const std::string name = config.get<std::string>("dtype");
  if (!ramjet::parse_dtype(name, dtype_) ||
      !(ramjet::same_dtype(dtype_, ramjet::dtype_of<float>()) || ramjet::same_dtype(dtype_, ramjet::dtype_of<double>()) ||
        ramjet::same_dtype(dtype_, ramjet::dtype_of<int32_t>()) || ramjet::same_dtype(dtype_, ramjet::dtype_of<uint8_t>())))
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT,
                        config.where("dtype") + ": unsupported '" + name + "' (float32, float64, int32, uint8)");
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
