// A walk over a tf.train.Example's wire format that counts, before protobuf parses it, the parts whose parsed
// form costs far more memory than their encoding: map entries (features) and bytes values. Two bytes of wire
// data can become a hash node or a std::string of 30+ bytes, so a record within the size limit could still
// parse into gigabytes.
#pragma once

#include <cstdint>
#include <string_view>

namespace stock_records {

inline constexpr uint64_t kMaxFeatures = uint64_t{1} << 16;     // per Example
inline constexpr uint64_t kMaxBytesValues = uint64_t{1} << 20;  // bytes_list values, over all features

struct ExampleCounts {
  uint64_t features = 0;
  uint64_t bytes_values = 0;
};

// Counts up to the limits (it stops once one is passed). Wire data it cannot walk is left for protobuf to refuse.
ExampleCounts count_example_parts(std::string_view record);

}  // namespace stock_records
