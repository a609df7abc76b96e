// data_source "npy": arrays saved with numpy.save, one .npy file per tensor; example i is row i of every file.
// Config: files ({"<tensor name>": "<path>", ...}, required, at least one; paths relative to the manifest).
// Elements: each tensor with its file's shape less the first axis; uint8, int32 and float32 as stored, int64
// converted to int32 and float64 to float32 (a value that does not fit is refused when its example is read).
// Opening a file reads only its header; each example is read when asked for (pread, not a mapping). Refused,
// naming the file and the byte: version other than 1.0/2.0/3.0, big-endian or other dtypes, object arrays,
// 'fortran_order': True, a malformed header, truncated or overlong data, and files whose example counts differ.
#pragma once

#include "array_table.hpp"

#include <ramjet/sdk.hpp>

namespace stock_sources {

class NpySource {
 public:
  static ramjet::Fields fields();
  static void check(const nlohmann::json& config, ramjet::Problems& problems);
  explicit NpySource(const ramjet::Config& config);
  int64_t cardinality() const { return table_.cardinality(); }
  nlohmann::json element_spec() const { return table_.element_spec(); }
  void get(int64_t index, ramjet::Example& out) const { table_.get(index, out, "npy"); }

 private:
  ArrayTable table_;
};

}  // namespace stock_sources
