#include "ramjet/data/batcher.hpp"

#include "ramjet/data/batch.hpp"
#include "ramjet/plugin/log.hpp"
#include "ramjet/plugin/trace.hpp"

#include <vector>

namespace ramjet::core {

Batcher::Batcher(int64_t batch, bool drop_remainder, NextResult next, EpochEnd on_epoch_end,
                 BatchAssembly* assembly)
    : batch_(batch), drop_remainder_(drop_remainder), next_(std::move(next)), on_epoch_end_(std::move(on_epoch_end)),
      assembly_(assembly) {}

std::optional<Batch> Batcher::next() {
  std::vector<Example> items;
  items.reserve(static_cast<size_t>(batch_));
  int64_t first_position = -1;
  int64_t placed = 0;
  auto make = [&](int64_t epoch, int64_t end_position) {
    TraceSpan span("batch assembly", "elements", placed > 0 ? placed : static_cast<int64_t>(items.size()));
    Batch b;
    if (placed > 0) {
      b.data = assembly_->take(epoch, first_position / batch_, placed);
      b.epoch = epoch;
      b.end_position = end_position;
      b.elements = placed;
      return b;
    }
    b.data = stack_examples(items, first_position);
    for (const auto& item : items)
      for (const auto& library : item.keepalive) b.data.keep_alive(library);
    b.epoch = epoch;
    b.end_position = end_position;
    b.elements = static_cast<int64_t>(items.size());
    return b;
  };
  for (;;) {
    WorkResult r = next_();
    if (r.error) std::rethrow_exception(r.error);
    switch (r.kind) {
      case WorkItem::Kind::kElement:
        if (!r.skipped.empty()) {
          if (skipped_++ < 10) log(RAMJET_LOG_WARNING, "pipeline", "skipped: " + r.skipped);
          if (skipped_ == 10) log(RAMJET_LOG_WARNING, "pipeline", "further skipped elements are only counted");
          continue;
        }
        if (first_position < 0) first_position = r.position;
        if (r.placed) {
          if (++placed == batch_) return make(r.epoch, r.position + 1);
          break;
        }
        items.push_back(std::move(*r.example));
        if (static_cast<int64_t>(items.size()) == batch_) return make(r.epoch, r.position + 1);
        break;
      case WorkItem::Kind::kEpochEnd: {
        on_epoch_end_(r.epoch, r.position);
        if ((!items.empty() || placed > 0) && !drop_remainder_) return make(r.epoch, r.position);
        if (placed > 0) assembly_->take(r.epoch, first_position / batch_, placed);  // dropped: free it
        items.clear();
        placed = 0;
        first_position = -1;
        break;
      }
      case WorkItem::Kind::kStreamEnd:
        return std::nullopt;
    }
  }
}

}  // namespace ramjet::core
