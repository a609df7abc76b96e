// Shuffling with a bounded buffer, as tf.data's shuffle(buffer_size) does: fill the buffer, then repeatedly emit a
// uniformly chosen slot and refill it from the input. A buffer at least as large as the input gives a uniform
// permutation. The same generator drives index shuffles (random-access sources) and element shuffles
// (sequential sources), so both give the same order for the same input.
#pragma once

#include "ramjet/plugin/seeds.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace ramjet::core {

class ShuffleRng {
 public:
  explicit ShuffleRng(uint64_t seed) : state_(seed) {}
  uint64_t next() { return mix64(state_ += 0x9E3779B97F4A7C15ull); }
  // Uniform in [0, n) without modulo bias (Lemire's method).
  uint64_t below(uint64_t n) {
    unsigned __int128 m = static_cast<unsigned __int128>(next()) * n;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < n) {
      const uint64_t threshold = -n % n;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(next()) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

 private:
  uint64_t state_;
};

// Streams items through a bounded shuffle buffer. `pull(T&)` returns false at the end of the input.
template <class T>
class ShuffleBuffer {
 public:
  ShuffleBuffer(int64_t capacity, uint64_t seed) : capacity_(capacity < 1 ? 1 : capacity), rng_(seed) {}

  template <class Pull>
  std::optional<T> next(Pull&& pull) {
    while (!input_done_ && static_cast<int64_t>(buffer_.size()) < capacity_) {
      T item;
      if (!pull(item)) input_done_ = true;
      else buffer_.push_back(std::move(item));
    }
    if (buffer_.empty()) return std::nullopt;
    const size_t j = static_cast<size_t>(rng_.below(buffer_.size()));
    T out = std::move(buffer_[j]);
    T refill;
    if (!input_done_ && pull(refill)) {
      buffer_[j] = std::move(refill);
    } else {
      input_done_ = true;
      buffer_[j] = std::move(buffer_.back());
      buffer_.pop_back();
    }
    return out;
  }

  size_t buffered() const { return buffer_.size(); }

 private:
  int64_t capacity_;
  ShuffleRng rng_;
  std::vector<T> buffer_;
  bool input_done_ = false;
};

// The order in which `items` come out of a shuffle buffer of `capacity` seeded with `seed`.
std::vector<int64_t> shuffled(std::span<const int64_t> items, int64_t capacity, uint64_t seed);

}  // namespace ramjet::core
