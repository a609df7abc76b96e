#include "kernels.hpp"

#include <cmath>
#include <cstring>

namespace onednn {
namespace {
// Below this many elements a parallel region costs more than it saves.
constexpr size_t kParallelMin = 1 << 15;

inline uint64_t mix(uint64_t z) {  // SplitMix64's finaliser: a counter-based generator, so any thread can draw any element
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
}  // namespace

void zero_floats(float* dst, size_t n) { std::memset(dst, 0, n * sizeof(float)); }

void copy_floats(float* dst, const float* src, size_t n) {
  if (dst != src) std::memcpy(dst, src, n * sizeof(float));
}

void add_floats(float* dst, const float* src, size_t n) {
  const int64_t m = static_cast<int64_t>(n);
#pragma omp parallel for simd if (n >= kParallelMin) schedule(static)
  for (int64_t i = 0; i < m; ++i) dst[i] += src[i];
}

bool all_finite(const float* x, size_t n) {
  const int64_t m = static_cast<int64_t>(n);
  int bad = 0;
#pragma omp parallel for reduction(| : bad) if (n >= kParallelMin) schedule(static)
  for (int64_t i = 0; i < m; ++i) bad |= !std::isfinite(x[i]);
  return bad == 0;
}

void dropout_apply(float* dst, const float* src, size_t n, float rate, uint64_t seed, uint64_t salt) {
  const float scale = 1.0f / (1.0f - rate);
  // Keep when the top 24 bits, as a fraction, reach the rate.
  const uint64_t threshold = static_cast<uint64_t>(static_cast<double>(rate) * double(1 << 24));
  const uint64_t base = mix(seed ^ mix(salt + 0x9E3779B97F4A7C15ull));
  const int64_t m = static_cast<int64_t>(n);
#pragma omp parallel for simd if (n >= kParallelMin) schedule(static)
  for (int64_t i = 0; i < m; ++i) {
    const uint64_t r = mix(base + static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull) >> 40;
    dst[i] = r >= threshold ? src[i] * scale : 0.0f;
  }
}

}  // namespace onednn
