// Named arrays that share their first axis: example i is row i of every array. What the npy and npz sources
// serve; random access, so the pipeline shards, shuffles and resumes them as it does idx.
#pragma once

#include "npy_array.hpp"

#include <ramjet/sdk.hpp>

#include <string>
#include <utility>
#include <vector>

namespace stock_sources {

class ArrayTable {
 public:
  // Adds `array` under tensor name `key`; `where` (the manifest pointer of its entry) leads the error when its
  // example count differs from the arrays before it.
  void add(std::string key, NpyArray array, const std::string& where);
  int64_t cardinality() const { return arrays_.empty() ? 0 : arrays_.front().second.count(); }
  nlohmann::json element_spec() const;
  void get(int64_t index, ramjet::Example& out, const char* source) const;

 private:
  std::vector<std::pair<std::string, NpyArray>> arrays_;
};

}  // namespace stock_sources
