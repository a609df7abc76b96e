#include "ramjet/data/sequencer.hpp"

#include "ramjet/data/shuffle.hpp"

#include <numeric>

namespace ramjet::core {

namespace {
constexpr uint64_t kShuffleStage = 0x5348554646ull;  // keeps shuffle seeds apart from transform seeds
}

class ShuffleState {
 public:
  ShuffleState(int64_t capacity, uint64_t seed) : buffer(capacity, seed) {}
  ShuffleBuffer<std::pair<int64_t, Example>> buffer;
};

Sequencer::Sequencer(SequencerConfig config, int64_t random_access_count, std::unique_ptr<SequentialReader> reader,
                     ElementCache* cache)
    : config_(config), random_access_count_(random_access_count), reader_(std::move(reader)), cache_(cache) {}

Sequencer::~Sequencer() = default;

int64_t Sequencer::elements_per_epoch() const {
  if (random_access_count_ < 0) return -1;
  const int64_t c = config_.shard_count;
  return shard_end() / c + (config_.shard_index < shard_end() % c ? 1 : 0);
}

void Sequencer::epoch_consumed(int64_t epoch) {
  {
    std::lock_guard lock(consumed_mutex_);
    consumed_epochs_ = std::max(consumed_epochs_, epoch + 1);
  }
  consumed_cv_.notify_all();
}

void Sequencer::begin_epoch() {
  const uint64_t shuffle_seed = element_seed(config_.seed, static_cast<uint64_t>(epoch_), 0, kShuffleStage);
  position_ = 0;
  in_epoch_ = true;
  order_.clear();
  from_cache_ = false;
  if (!random_access() && cache_ != nullptr && !cache_->complete() && last_epoch_count_ >= 0) {
    // If every element of the last epoch is in the cache by now, read this epoch from it. Otherwise some are still
    // being worked on: read the source once more (same values) rather than block the thread pool here.
    cache_->finish_epoch(last_epoch_count_);
  }
  if (random_access() || (cache_ != nullptr && cache_->complete())) {
    if (random_access()) {
      for (int64_t i = config_.shard_index; i < shard_end(); i += config_.shard_count) order_.push_back(i);
    } else {
      from_cache_ = true;
      order_.resize(static_cast<size_t>(cache_->count()));
      std::iota(order_.begin(), order_.end(), 0);
    }
    if (config_.shuffle > 0) order_ = shuffled(order_, config_.shuffle, shuffle_seed);
    return;
  }
  reader_->start_epoch(static_cast<uint64_t>(epoch_));
  read_ = 0;
  kept_ = 0;
  stream_ended_ = false;
  shuffle_ = config_.shuffle > 0 ? std::make_unique<ShuffleState>(config_.shuffle, shuffle_seed) : nullptr;
}

// Random access: the source indices shards draw from, [0, shard_end()), after take and, with even shards,
// without the last partial round.
int64_t Sequencer::shard_end() const {
  const int64_t n = config_.take >= 0 ? std::min(config_.take, random_access_count_) : random_access_count_;
  return config_.even_shards ? n / config_.shard_count * config_.shard_count : n;
}

// The next raw element of the sequential stream after take and shard, with its id.
bool Sequencer::pull_raw(std::pair<int64_t, Example>& out) {
  auto read_one = [&](Example& e) {
    if (config_.take >= 0 && read_ >= config_.take) return false;
    if (!reader_->next(e)) return false;
    ++read_;
    return true;
  };
  while (!stream_ended_) {
    Example e;
    if (!read_one(e)) break;
    const int64_t index = read_ - 1;
    if (index % config_.shard_count != config_.shard_index) continue;
    if (config_.even_shards) {
      // Keep this element only if its whole round of shard_count elements exists: every shard then ends after the
      // same number of elements, though none knows the stream's length in advance.
      bool round_complete = true;
      for (int64_t rest = config_.shard_count - 1 - config_.shard_index; rest > 0 && round_complete; --rest) {
        Example skipped;
        round_complete = read_one(skipped);
      }
      if (!round_complete) break;
    }
    out = {kept_++, std::move(e)};
    return true;
  }
  stream_ended_ = true;
  return false;
}

std::optional<std::pair<int64_t, Example>> Sequencer::next_raw() {
  if (shuffle_) return shuffle_->buffer.next([&](std::pair<int64_t, Example>& item) { return pull_raw(item); });
  std::pair<int64_t, Example> item;
  if (!pull_raw(item)) return std::nullopt;
  return item;
}

WorkItem Sequencer::next() {
  WorkItem item;
  if (done_ || epoch_ >= config_.epochs) {
    done_ = true;
    item.kind = WorkItem::Kind::kStreamEnd;
    item.epoch = epoch_;
    return item;
  }
  if (!in_epoch_) begin_epoch();
  item.epoch = epoch_;
  if (!order_.empty() || random_access() || from_cache_) {
    if (position_ < static_cast<int64_t>(order_.size())) {
      item.position = position_;
      item.id = order_[static_cast<size_t>(position_++)];
      item.from_cache = from_cache_;
      return item;
    }
  } else if (auto raw = next_raw()) {
    item.position = position_++;
    item.id = raw->first;
    item.raw = std::move(raw->second);
    return item;
  }
  item.kind = WorkItem::Kind::kEpochEnd;
  item.position = position_;
  if (!from_cache_ && !random_access()) last_epoch_count_ = position_;
  ++epoch_;
  in_epoch_ = false;
  return item;
}

void Sequencer::start_at(int64_t epoch, int64_t position) {
  epoch_ = epoch;
  in_epoch_ = false;
  done_ = false;
  {
    std::lock_guard lock(consumed_mutex_);
    consumed_epochs_ = epoch;
  }
  if (epoch_ >= config_.epochs) return;
  begin_epoch();
  if (!order_.empty() || random_access() || from_cache_) {
    position_ = std::min<int64_t>(position, static_cast<int64_t>(order_.size()));
    return;
  }
  // Sequential: replay the stream (and the shuffle buffer's draws) without running any transform.
  for (int64_t i = 0; i < position && next_raw(); ++i) ++position_;
}

}  // namespace ramjet::core
