#include "kernels.hpp"

#include "isa.hpp"
#include "loop_share.hpp"

#include <immintrin.h>

#include <algorithm>
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

// dst += src over bf16 values, 16 at a time with AVX-512 (the gradient fan-in of a bf16 residual block: GCC builds
// the portable loop below from 128-bit vectors). The target pragma reaches the function only; push and pop keep it,
// the note that passing a vector would change with the target's ABI (none crosses a call), and GCC 12's false
// -Wmaybe-uninitialized in its AVX-512 intrinsics (bug 105593), out of the rest.
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
void add_halves_avx512(uint16_t* dst, const uint16_t* src, int64_t n) {
  const auto widen16 = [](const uint16_t* p) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 sum = _mm512_add_ps(widen16(dst + i), widen16(src + i));
    // narrow()'s rounding: to nearest, ties to even; a NaN stays a quiet NaN.
    const __m512i u = _mm512_castps_si512(sum);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF))), 16);
    const __mmask16 nan = _mm512_cmp_ps_mask(sum, sum, _CMP_UNORD_Q);
    r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm512_cvtepi32_epi16(r));
  }
  for (; i < n; ++i) dst[i] = narrow(widen(dst[i]) + widen(src[i]));
}
#pragma GCC diagnostic pop
#pragma GCC pop_options

void add_halves(uint16_t* dst, const uint16_t* src, size_t n) {
  const int64_t m = static_cast<int64_t>(n);
  static const bool avx512 = avx512_allowed();  // bf16 training runs only where AVX-512 is
  if (avx512) {
    const LoopTicket ticket;
#pragma omp parallel if (n >= kParallelMin)
    {
      const LoopShare share(ticket);
#pragma omp for schedule(dynamic, 1) nowait
      for (int64_t at = 0; at < m; at += kElementsPerHandout)
        add_halves_avx512(dst + at, src + at, std::min<int64_t>(kElementsPerHandout, m - at));
    }
    return;
  }
  const LoopTicket ticket;
#pragma omp parallel if (n >= kParallelMin)
  {
    const LoopShare share(ticket);
#pragma omp for simd schedule(dynamic, kElementsPerHandout) nowait
    for (int64_t i = 0; i < m; ++i) dst[i] = narrow(widen(dst[i]) + widen(src[i]));
  }
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
  const LoopTicket ticket;
#pragma omp parallel if (n >= kParallelMin)
  {
    const LoopShare share(ticket);
#pragma omp for simd schedule(dynamic, kElementsPerHandout) nowait
    for (int64_t i = 0; i < m; ++i) dst[i] = mask.keep(i) ? narrow(widen(src[i]) * scale) : uint16_t{0};
  }
}
}  // namespace

void zero_floats(float* dst, size_t n) { std::memset(dst, 0, n * sizeof(float)); }

void copy_floats(float* dst, const float* src, size_t n) {
  if (dst != src) std::memcpy(dst, src, n * sizeof(float));
}

void add_floats(float* dst, const float* src, size_t n) {
  const int64_t m = static_cast<int64_t>(n);
  const LoopTicket ticket;
#pragma omp parallel if (n >= kParallelMin)
  {
    const LoopShare share(ticket);
#pragma omp for simd schedule(dynamic, kElementsPerHandout) nowait
    for (int64_t i = 0; i < m; ++i) dst[i] += src[i];
  }
}

// Tested on the bits (an exponent of all ones is an infinity or a NaN) so that the loop vectorises: std::isfinite
// kept it scalar, about 1.5 % of the CNN's bf16 step (perf, the 2-vCPU Xeon).
bool all_finite(const float* x, size_t n) {
  const int64_t m = static_cast<int64_t>(n);
  uint32_t bad = 0;
  const LoopTicket ticket;
#pragma omp parallel reduction(| : bad) if (n >= kParallelMin)
  {
    const LoopShare share(ticket);
#pragma omp for schedule(dynamic, 1) nowait
    for (int64_t at = 0; at < m; at += kElementsPerHandout) {
      const int64_t end = std::min<int64_t>(m, at + kElementsPerHandout);
      uint32_t part = 0;
#pragma omp simd reduction(| : part)
      for (int64_t i = at; i < end; ++i) {
        uint32_t bits;
        std::memcpy(&bits, x + i, sizeof bits);
        part |= (bits & 0x7F800000u) == 0x7F800000u;
      }
      bad |= part;
    }
  }
  return bad == 0;
}

void dropout_apply(float* dst, const float* src, size_t n, float rate, uint64_t seed, uint64_t salt) {
  const float scale = 1.0f / (1.0f - rate);
  const DropoutMask mask(rate, seed, salt);
  const int64_t m = static_cast<int64_t>(n);
  const LoopTicket ticket;
#pragma omp parallel if (n >= kParallelMin)
  {
    const LoopShare share(ticket);
#pragma omp for simd schedule(dynamic, kElementsPerHandout) nowait
    for (int64_t i = 0; i < m; ++i) dst[i] = mask.keep(i) ? src[i] * scale : 0.0f;
  }
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

namespace {
// clip_grad_to_both over one element type: Bits moves dy's values untouched, Widen reads y as a float.
template <class Bits, class Widen>
void clip_grad_to_both(const Bits* y, const Bits* dy, float lo, float hi, Bits* first, Bits* second, int64_t n,
                       Widen widen_y) {
  const LoopTicket ticket;
#pragma omp parallel if (n >= static_cast<int64_t>(kParallelMin))
  {
    const LoopShare share(ticket);
#pragma omp for simd schedule(dynamic, kElementsPerHandout) nowait
    for (int64_t i = 0; i < n; ++i) {
      const float v = widen_y(y[i]);
      const Bits pass = static_cast<Bits>(-static_cast<Bits>((v > lo) & (v < hi)));  // all ones, or zero: no branch
      const Bits g = dy[i] & pass;
      first[i] = g;
      second[i] = g;
    }
  }
}
}  // namespace

void clip_grad_to_both(const dnnl::memory& y, const dnnl::memory& dy, float lo, float hi, const dnnl::memory& first,
                       const dnnl::memory& second) {
  if (is_bf16(y))
    return clip_grad_to_both(halves(y), halves(dy), lo, hi, halves(first), halves(second),
                             static_cast<int64_t>(half_count(y)), [](uint16_t b) { return widen(b); });
  auto bits = [](const dnnl::memory& m) { return static_cast<uint32_t*>(m.get_data_handle()); };
  clip_grad_to_both(bits(y), bits(dy), lo, hi, bits(first), bits(second),
                    static_cast<int64_t>(y.get_desc().get_size() / sizeof(uint32_t)),
                    [](uint32_t b) { return std::bit_cast<float>(b); });
}

void convert_memory(const dnnl::memory& dst, const dnnl::memory& src, bool accumulate) {
  if (is_bf16(dst)) {
    uint16_t* d = halves(dst);
    const float* s = floats(src);
    const int64_t m = static_cast<int64_t>(half_count(dst));
    if (accumulate) {
      const LoopTicket ticket;
#pragma omp parallel if (m >= static_cast<int64_t>(kParallelMin))
      {
        const LoopShare share(ticket);
#pragma omp for simd schedule(dynamic, kElementsPerHandout) nowait
        for (int64_t i = 0; i < m; ++i) d[i] = narrow(widen(d[i]) + s[i]);
      }
    } else {
      const LoopTicket ticket;
#pragma omp parallel if (m >= static_cast<int64_t>(kParallelMin))
      {
        const LoopShare share(ticket);
#pragma omp for simd schedule(dynamic, kElementsPerHandout) nowait
        for (int64_t i = 0; i < m; ++i) d[i] = narrow(s[i]);
      }
    }
    return;
  }
  float* d = floats(dst);
  const uint16_t* s = halves(src);
  const int64_t m = static_cast<int64_t>(float_count(dst));
  if (accumulate) {
    const LoopTicket ticket;
#pragma omp parallel if (m >= static_cast<int64_t>(kParallelMin))
    {
      const LoopShare share(ticket);
#pragma omp for simd schedule(dynamic, kElementsPerHandout) nowait
      for (int64_t i = 0; i < m; ++i) d[i] += widen(s[i]);
    }
  } else {
    const LoopTicket ticket;
#pragma omp parallel if (m >= static_cast<int64_t>(kParallelMin))
    {
      const LoopShare share(ticket);
#pragma omp for simd schedule(dynamic, kElementsPerHandout) nowait
      for (int64_t i = 0; i < m; ++i) d[i] = widen(s[i]);
    }
  }
}

void dropout_memory(const dnnl::memory& dst, const dnnl::memory& src, float rate, uint64_t seed, uint64_t salt) {
  if (is_bf16(dst)) return dropout_halves(halves(dst), halves(src), half_count(dst), rate, seed, salt);
  dropout_apply(floats(dst), floats(src), float_count(dst), rate, seed, salt);
}

}  // namespace onednn
