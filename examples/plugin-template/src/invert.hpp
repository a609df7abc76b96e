// transform "invert": y = peak − x for a uint8 or float32 tensor — the smallest useful component, to copy from.
#pragma once

#include <ramjet/sdk.hpp>

#include <string>

namespace template_plugin {

class Invert {
 public:
  // The configuration, declared once: `ramjet validate` reports an unknown key or a bad value with its JSON
  // pointer, and create() refuses the same configuration, before the constructor runs.
  static ramjet::Fields fields() {
    return {ramjet::Field::string("key").fallback("image").doc("the tensor to invert"),
            ramjet::Field::number("peak").at_least(0).fallback(255.0).doc("y = peak - x")};
  }

  // Configuration arrives as JSON; ramjet::Config reads it and names the manifest field in any error.
  explicit Invert(const ramjet::Config& config)
      : key_(config.get_or<std::string>("key", "image")), peak_(config.get_or("peak", 255.0)) {}

  // Must be thread-safe and a pure function of (example, seed): the host may call it from many threads.
  void apply(ramjet::Example& example, uint64_t /*seed*/) const {
    DLTensor& t = example.get(key_);
    const int64_t n = ramjet::element_count(t);
    if (ramjet::same_dtype(t.dtype, ramjet::dtype_of<uint8_t>())) {
      uint8_t* v = ramjet::data_as<uint8_t>(t);
      for (int64_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(peak_ - v[i]);
    } else if (ramjet::same_dtype(t.dtype, ramjet::dtype_of<float>())) {
      float* v = ramjet::data_as<float>(t);
      for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(peak_) - v[i];
    } else {
      // Thrown errors become a status and message at the ABI boundary; nothing C++ crosses it.
      throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, "invert: '" + key_ + "' must be uint8 or float32, not " +
                                                      ramjet::dtype_name(t.dtype));
    }
  }

 private:
  std::string key_;
  double peak_;
};

}  // namespace template_plugin
