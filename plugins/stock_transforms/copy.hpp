// transform "copy": duplicates a tensor under a new name, so an image-to-image pipeline can keep the clean image
// as the target ("to") before blur, noise or downscale degrade the input ("from"). The copy has the source's
// dtype and shape; nothing else is touched.
// Config: from (required), to (required, must differ from `from`).
// Refuses an element whose `from` is missing or whose `to` already exists (overwriting a tensor silently would
// hide a pipeline mistake such as two copies to the same name).
#pragma once

#include <ramjet/sdk.hpp>

#include <string>

namespace stock_transforms {

class Copy {
 public:
  static ramjet::Fields fields();
  static void check(const nlohmann::json& config, ramjet::Problems& problems);
  explicit Copy(const ramjet::Config& config);
  void apply(ramjet::Example& example, uint64_t seed) const;

 private:
  std::string from_, to_;
};

}  // namespace stock_transforms
