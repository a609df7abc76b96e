// transform "one_hot": replaces an integer scalar label with a [depth] vector holding 1 at the label and 0
// elsewhere (tf.one_hot). A label outside [0, depth) is corrupt data, not silently an all-zero row.
// Config: key ("label"), depth (required), dtype (float32; also float64, int32, int64, uint8).
#pragma once

#include <ramjet/sdk.hpp>

#include <string>

namespace stock_transforms {

class OneHot {
 public:
  static ramjet::Fields fields();
  explicit OneHot(const ramjet::Config& config);
  void apply(ramjet::Example& example, uint64_t seed) const;

 private:
  std::string key_;
  int64_t depth_;
  DLDataType dtype_{};
};

}  // namespace stock_transforms
