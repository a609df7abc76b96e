// Streaming statistics over the batches an input pipeline produces: per tensor, min/max/mean/std over every
// value, and a histogram of per-element integer scalars (class labels).
#pragma once

#include "ramjet/plugin/example.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace ramjet::core {

class TensorStats {
 public:
  void add_batch(const Example& batch);
  nlohmann::json to_json() const;

 private:
  struct Accumulator {
    std::string dtype;
    std::vector<int64_t> element_shape;  // without the batch dimension
    int64_t values = 0;
    double min = 0, max = 0, sum = 0, sum_squares = 0;
    bool integral = false;
    bool histogram_enabled = false;  // integer scalars per element
    std::map<int64_t, int64_t> histogram;
  };
  static constexpr size_t kMaxHistogramBins = 4096;
  std::vector<std::pair<std::string, Accumulator>> tensors_;
};

}  // namespace ramjet::core
