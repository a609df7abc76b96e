#include "example_scan.hpp"

namespace stock_records {
namespace {

// A bounded reader over one message's bytes; every read fails (returns false) rather than pass the end.
struct Wire {
  const uint8_t* p;
  const uint8_t* end;

  bool varint(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64 && p < end; shift += 7) {
      const uint8_t b = *p++;
      v |= uint64_t(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  }
  // The next field: its number and, for length-delimited ones, its payload; other wire types are skipped.
  bool next(uint64_t& number, Wire& payload, bool& delimited) {
    uint64_t key = 0;
    if (!varint(key)) return false;
    number = key >> 3;
    delimited = false;
    switch (key & 7) {
      case 0: { uint64_t ignored; return varint(ignored); }
      case 1: if (end - p < 8) return false; p += 8; return true;
      case 5: if (end - p < 4) return false; p += 4; return true;
      case 2: {
        uint64_t length = 0;
        if (!varint(length) || length > uint64_t(end - p)) return false;
        payload = {p, p + length};
        p += length;
        delimited = true;
        return true;
      }
      default: return false;  // groups: not in tf.train.Example; protobuf decides
    }
  }
};

bool over(const ExampleCounts& c) { return c.features > kMaxFeatures || c.bytes_values > kMaxBytesValues; }

// Fields of `w` numbered `number` that are length-delimited, each handed to `visit`; stops at a limit.
template <class Visit>
void each_delimited(Wire w, uint64_t number, ExampleCounts& counts, Visit visit) {
  uint64_t n;
  Wire payload{};
  bool delimited;
  while (w.p < w.end && !over(counts) && w.next(n, payload, delimited))
    if (delimited && n == number) visit(payload);
}

}  // namespace

ExampleCounts count_example_parts(std::string_view record) {
  ExampleCounts counts;
  const auto* data = reinterpret_cast<const uint8_t*>(record.data());
  // Example.features (1) -> Features.feature map entries (1) -> entry.value (2) -> Feature.bytes_list (1)
  // -> BytesList.value (1).
  each_delimited(Wire{data, data + record.size()}, 1, counts, [&](Wire features) {
    each_delimited(features, 1, counts, [&](Wire entry) {
      ++counts.features;
      each_delimited(entry, 2, counts, [&](Wire feature) {
        each_delimited(feature, 1, counts, [&](Wire bytes_list) {
          each_delimited(bytes_list, 1, counts, [&](Wire) { ++counts.bytes_values; });
        });
      });
    });
  });
  return counts;
}

}  // namespace stock_records
