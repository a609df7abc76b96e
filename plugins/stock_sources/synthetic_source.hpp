// data_source "synthetic": reproducible random tensors of configurable names, shapes and dtypes, for tests and
// for benchmarks that must not touch the disk.
// Config: count (elements), tensors: {"<name>": {"shape": [...], "dtype": "float32", "low": 0, "high": 1}}.
// Values are uniform in [low, high) (integers: [low, high)), a pure function of (run seed, element index, name).
#pragma once

#include <ramjet/sdk.hpp>

#include <string>
#include <vector>

namespace stock_sources {

class SyntheticSource {
 public:
  static ramjet::Fields fields();
  static void check(const nlohmann::json& config, ramjet::Problems& problems);  // each entry of "tensors"
  explicit SyntheticSource(const ramjet::Config& config);
  int64_t cardinality() const { return count_; }
  nlohmann::json element_spec() const;
  void get(int64_t index, ramjet::Example& out) const;

 private:
  struct TensorSpec {
    std::string name;
    std::vector<int64_t> shape;
    DLDataType dtype{};
    double low = 0, high = 1;
  };
  int64_t count_ = 0;
  uint64_t seed_ = 0;
  std::vector<TensorSpec> tensors_;
};

}  // namespace stock_sources
