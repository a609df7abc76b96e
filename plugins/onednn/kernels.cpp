#include "kernels.hpp"

#include <bit>
#include <cmath>
#include <cstring>

namespace onednn {
namespace {
// Below this many elements a parallel region costs more than it saves.
constexpr size_t kParallelMin = 1 << 15;
// Elements a thread takes at a time in the loops below: handed to whichever thread is free, so one that shares its
// CPU with another process does less (batch_chunks.hpp), and large enough (64 KiB of float32) that handing out
// costs nothing beside the work. Every element is computed alone, so the results do not depend on who takes what.
constexpr int kElementsPerHandout = 1 << 14;

inline uint64_t mix(uint64_t z) {  // SplitMix64's finaliser: a counter-based generator, so any thread can draw any element
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

inline uint16_t* halves(const dnnl::memory& m) { return static_cast<uint16_t*>(m.get_data_handle()); }
inline size_t half_count(const dnnl::memory& m) { return m.get_desc().get_size() / sizeof(uint16_t); }
inline bool is_bf16(const dnnl::memory& m) { return m.get_desc().data_type() == dt::bf16; }

void add_halves(uint16_t* dst, const uint16_t* src, size_t n) {
  const int64_t m = static_cast<int64_t>(n);
#pragma omp parallel for simd if (n >= kParallelMin) schedule(dynamic, kElementsPerHandout)
  for (int64_t i = 0; i < m; ++i) dst[i] = narrow(widen(dst[i]) + widen(src[i]));
}

// Keep when the top 24 bits, as a fraction, reach the rate: one rule for both types, so masks agree.
struct DropoutMask {
  DropoutMask(float rate, uint64_t seed, uint64_t salt)
      : threshold(static_cast<uint64_t>(static_cast<double>(rate) * double(1 << 24))),
        base(mix(seed ^ mix(salt + 0x9E3779B97F4A7C15ull))) {}
  bool keep(int64_t i) const { return (mix(base + static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull) >> 40) >= threshold; }
  uint64_t threshold, base;
};

void dropout_halves(uint16_t* dst, const uint16_t* src, size_t n, float rate, uint64_t seed, uint64_t salt) {
  const float scale = 1.0f / (1.0f - rate);
  const DropoutMask mask(rate, seed, salt);
  const int64_t m = static_cast<int64_t>(n);
#pragma omp parallel for simd if (n >= kParallelMin) schedule(dynamic, kElementsPerHandout)
  for (int64_t i = 0; i < m; ++i) dst[i] = mask.keep(i) ? narrow(widen(src[i]) * scale) : uint16_t{0};
}
}  // namespace

void zero_floats(float* dst, size_t n) { std::memset(dst, 0, n * sizeof(float)); }

void copy_floats(float* dst, const float* src, size_t n) {
  if (dst != src) std::memcpy(dst, src, n * sizeof(float));
}

void add_floats(float* dst, const float* src, size_t n) {
  const int64_t m = static_cast<int64_t>(n);
#pragma omp parallel for simd if (n >= kParallelMin) schedule(dynamic, kElementsPerHandout)
  for (int64_t i = 0; i < m; ++i) dst[i] += src[i];
}

// Tested on the bits (an exponent of all ones is an infinity or a NaN) so that the loop vectorises: std::isfinite
// kept it scalar, about 1.5 % of the CNN's bf16 step (perf, the 2-vCPU Xeon).
bool all_finite(const float* x, size_t n) {
  const int64_t m = static_cast<int64_t>(n);
  uint32_t bad = 0;
#pragma omp parallel for simd reduction(| : bad) if (n >= kParallelMin) schedule(dynamic, kElementsPerHandout)
  for (int64_t i = 0; i < m; ++i) {
    uint32_t bits;
    std::memcpy(&bits, x + i, sizeof bits);
    bad |= (bits & 0x7F800000u) == 0x7F800000u;
  }
  return bad == 0;
}

void dropout_apply(float* dst, const float* src, size_t n, float rate, uint64_t seed, uint64_t salt) {
  const float scale = 1.0f / (1.0f - rate);
  const DropoutMask mask(rate, seed, salt);
  const int64_t m = static_cast<int64_t>(n);
#pragma omp parallel for simd if (n >= kParallelMin) schedule(dynamic, kElementsPerHandout)
  for (int64_t i = 0; i < m; ++i) dst[i] = mask.keep(i) ? src[i] * scale : 0.0f;
}

void zero_memory(const dnnl::memory& m) { std::memset(m.get_data_handle(), 0, m.get_desc().get_size()); }

void copy_memory(const dnnl::memory& dst, const dnnl::memory& src) {
  if (dst.get_data_handle() != src.get_data_handle())
    std::memcpy(dst.get_data_handle(), src.get_data_handle(), dst.get_desc().get_size());
}

void add_memory(const dnnl::memory& dst, const dnnl::memory& src) {
  if (is_bf16(dst)) return add_halves(halves(dst), halves(src), half_count(dst));
  add_floats(floats(dst), floats(src), float_count(dst));
}

void convert_memory(const dnnl::memory& dst, const dnnl::memory& src, bool accumulate) {
  if (is_bf16(dst)) {
    uint16_t* d = halves(dst);
    const float* s = floats(src);
    const int64_t m = static_cast<int64_t>(half_count(dst));
    if (accumulate) {
#pragma omp parallel for simd if (m >= static_cast<int64_t>(kParallelMin)) schedule(dynamic, kElementsPerHandout)
      for (int64_t i = 0; i < m; ++i) d[i] = narrow(widen(d[i]) + s[i]);
    } else {
#pragma omp parallel for simd if (m >= static_cast<int64_t>(kParallelMin)) schedule(dynamic, kElementsPerHandout)
      for (int64_t i = 0; i < m; ++i) d[i] = narrow(s[i]);
    }
    return;
  }
  float* d = floats(dst);
  const uint16_t* s = halves(src);
  const int64_t m = static_cast<int64_t>(float_count(dst));
  if (accumulate) {
#pragma omp parallel for simd if (m >= static_cast<int64_t>(kParallelMin)) schedule(dynamic, kElementsPerHandout)
    for (int64_t i = 0; i < m; ++i) d[i] += widen(s[i]);
  } else {
#pragma omp parallel for simd if (m >= static_cast<int64_t>(kParallelMin)) schedule(dynamic, kElementsPerHandout)
    for (int64_t i = 0; i < m; ++i) d[i] = widen(s[i]);
  }
}

void dropout_memory(const dnnl::memory& dst, const dnnl::memory& src, float rate, uint64_t seed, uint64_t salt) {
  if (is_bf16(dst)) return dropout_halves(halves(dst), halves(src), half_count(dst), rate, seed, salt);
  dropout_apply(floats(dst), floats(src), float_count(dst), rate, seed, salt);
}

}  // namespace onednn
