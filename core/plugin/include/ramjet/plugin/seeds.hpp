// Per-element seeds derived from (run seed, epoch, element index), so random transforms give the same output
// whatever the parallelism or order of execution.
#pragma once

#include <cstdint>

namespace ramjet::core {

// SplitMix64 finaliser: a bijective, well-mixed 64-bit hash.
constexpr uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

constexpr uint64_t element_seed(uint64_t run_seed, uint64_t epoch, uint64_t index, uint64_t stage = 0) {
  return mix64(mix64(mix64(mix64(run_seed) ^ epoch) ^ index) ^ stage);
}

}  // namespace ramjet::core
