// Deterministic per-element randomness for transforms: SeededRandom.
#ifndef RAMJET_SDK_RANDOM_HPP
#define RAMJET_SDK_RANDOM_HPP

#include <cmath>
#include <cstdint>

namespace ramjet {

// A small, fast generator for per-element randomness. Seed it with the seed the host passes to apply(); the same
// seed always gives the same draws, whatever thread runs the element.
class SeededRandom {
 public:
  explicit SeededRandom(uint64_t seed) : state_(seed) {}
  uint64_t next_u64() {  // SplitMix64
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }  // [0, 1)
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  bool bernoulli(double p) { return uniform() < p; }
  int64_t integer(int64_t lo, int64_t hi) {  // [lo, hi); lo when the range is empty
    if (hi <= lo) return lo;
    const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
    return static_cast<int64_t>(static_cast<uint64_t>(lo) + next_u64() % span);
  }
  // Normally distributed, by Box–Muller: exactly two draws per call and no value kept between calls, so the
  // sequence depends only on the seed and the calls made, and sizeof(SeededRandom) stays one word.
  float normal(float mean = 0.0f, float stddev = 1.0f) {
    const double radius = std::sqrt(-2.0 * std::log(1.0 - uniform()));  // 1 - [0, 1) = (0, 1]: never log(0)
    const double angle = 2.0 * 3.14159265358979323846 * uniform();
    return static_cast<float>(mean + stddev * (radius * std::cos(angle)));
  }

 private:
  uint64_t state_;
};

}  // namespace ramjet

#endif  // RAMJET_SDK_RANDOM_HPP
