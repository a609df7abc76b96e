#include "ramjet/data/shuffle.hpp"

namespace ramjet::core {

std::vector<int64_t> shuffled(std::span<const int64_t> items, int64_t capacity, uint64_t seed) {
  std::vector<int64_t> out;
  out.reserve(items.size());
  ShuffleBuffer<int64_t> buffer(capacity, seed);
  size_t next = 0;
  auto pull = [&](int64_t& item) {
    if (next == items.size()) return false;
    item = items[next++];
    return true;
  };
  while (auto item = buffer.next(pull)) out.push_back(*item);
  return out;
}

}  // namespace ramjet::core
