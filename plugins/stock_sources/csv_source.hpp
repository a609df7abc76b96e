// data_source "csv": numeric columns of a comma-separated file (raw or gzipped) as tensors, for tabular
// regression and classification.
// Config: file (required), header (true: the first line names the columns),
//         columns ({"<tensor name>": [columns...] | column, ...}, required; a column is a header name or a
//                  0-based index; names need header: true),
//         dtypes ({"<tensor name>": "float32" | "int32"}; default float32 for a list, int32 for a single column).
// Elements: a list of k columns -> a [k] vector; a single column -> a scalar (an int32 label by default; say
// "float32" in dtypes for a regression target).
// Parsing is strict (RFC 4180 quoting, "\n" or "\r\n" line ends, every row as wide as the first): a cell that is
// empty, not a number, not finite, or not an integer in int32 for an int32 tensor is refused with its line and
// column. The file is read once when the source opens; only the named columns are kept.
#pragma once

#include <ramjet/sdk.hpp>

#include <string>
#include <vector>

namespace stock_sources {

class CsvSource {
 public:
  static ramjet::Fields fields();
  static void check(const nlohmann::json& config, ramjet::Problems& problems);
  explicit CsvSource(const ramjet::Config& config);
  int64_t cardinality() const { return rows_; }
  nlohmann::json element_spec() const;
  void get(int64_t index, ramjet::Example& out) const;

 private:
  struct Output {
    std::string key;
    std::vector<size_t> columns;
    bool scalar = false;
    bool integer = false;
    std::vector<float> floats;     // rows_ x columns, when !integer
    std::vector<int32_t> integers;  // rows_ x columns, when integer
  };
  std::vector<Output> outputs_;
  int64_t rows_ = 0;
};

}  // namespace stock_sources
