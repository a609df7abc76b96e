// TFLite's integer requantization (gemmlowp fixed point), for the ops whose int8 arithmetic is written here rather
// than run by oneDNN (add). Following it bit for bit is what keeps those ops exactly equal to LiteRT's.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace onednn::int8 {

struct QuantizedMultiplier {
  int32_t multiplier = 0;  // Q31 mantissa in [2^30, 2^31)
  int shift = 0;           // > 0: left shift, < 0: right shift
};

// TFLite's QuantizeMultiplier: real = multiplier * 2^(shift - 31).
inline QuantizedMultiplier quantize_multiplier(double real) {
  if (real == 0.0) return {};
  int shift = 0;
  const double q = std::frexp(real, &shift);
  auto fixed = static_cast<int64_t>(std::round(q * (1LL << 31)));
  if (fixed == (1LL << 31)) {
    fixed /= 2;
    ++shift;
  }
  if (shift < -31) return {};
  return {static_cast<int32_t>(fixed), shift};
}

inline int32_t saturating_rounding_doubling_high_mul(int32_t a, int32_t b) {
  if (a == b && a == std::numeric_limits<int32_t>::min()) return std::numeric_limits<int32_t>::max();
  const int64_t ab = static_cast<int64_t>(a) * static_cast<int64_t>(b);
  const int32_t nudge = ab >= 0 ? (1 << 30) : (1 - (1 << 30));
  return static_cast<int32_t>((ab + nudge) / (1LL << 31));
}

// Division by 2^exponent, rounding half away from zero.
inline int32_t rounding_divide_by_pot(int32_t x, int exponent) {
  const int32_t mask = static_cast<int32_t>((1LL << exponent) - 1);
  const int32_t remainder = x & mask;
  const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

// TFLite's MultiplyByQuantizedMultiplier: round(x * real).
inline int32_t multiply(int32_t x, const QuantizedMultiplier& m) {
  const int left = m.shift > 0 ? m.shift : 0, right = m.shift > 0 ? 0 : -m.shift;
  return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x * (1 << left), m.multiplier), right);
}

// Integer division rounding half away from zero, as TFLite's average pooling does.
inline int32_t divide_rounding_away(int32_t sum, int32_t count) {
  return sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count;
}

}  // namespace onednn::int8
