// Groups finished elements into batches in the order results arrive. Batches never straddle epochs; the last
// partial batch of an epoch is kept or dropped (drop_remainder). Skipped elements are counted, errors raised.
#pragma once

#include "ramjet/data/batch.hpp"
#include "ramjet/data/work_result.hpp"

#include <functional>
#include <optional>

namespace ramjet::core {

struct Batch {
  Example data;
  int64_t epoch = 0;
  int64_t end_position = 0;  // the position after this batch's last element: where a resumed run continues
  int64_t elements = 0;
};

class Batcher {
 public:
  using NextResult = std::function<WorkResult()>;
  using EpochEnd = std::function<void(int64_t epoch, int64_t count)>;

  // With `assembly`, elements arrive already placed in their batches and are only counted here.
  Batcher(int64_t batch, bool drop_remainder, NextResult next, EpochEnd on_epoch_end, BatchAssembly* assembly);
  // The next batch, or nullopt at the end of the stream. Raises an element's error when it is reached.
  std::optional<Batch> next();
  int64_t skipped() const { return skipped_; }

 private:
  int64_t batch_;
  bool drop_remainder_;
  NextResult next_;
  EpochEnd on_epoch_end_;
  BatchAssembly* assembly_;
  int64_t skipped_ = 0;
};

}  // namespace ramjet::core
