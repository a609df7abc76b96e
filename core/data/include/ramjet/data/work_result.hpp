// What processing one WorkItem yields: the finished element, a skip (on_error: skip), or an error to raise when
// the consumer reaches this position — so errors surface in order, the same at any parallelism.
#pragma once

#include "ramjet/data/sequencer.hpp"

#include <exception>
#include <optional>
#include <string>

namespace ramjet::core {

struct WorkResult {
  WorkItem::Kind kind = WorkItem::Kind::kElement;
  int64_t epoch = 0;
  int64_t position = 0;
  int64_t id = 0;
  std::optional<Example> example;
  bool placed = false;       // the element was copied straight into its batch (BatchAssembly)
  std::string skipped;       // non-empty: the element was skipped, and why
  std::exception_ptr error;  // set: raise this at this position

  static WorkResult marker(const WorkItem& item) {
    WorkResult r;
    r.kind = item.kind;
    r.epoch = item.epoch;
    r.position = item.position;
    return r;
  }
};

}  // namespace ramjet::core
