#include "channel_mean.hpp"

#include "isa.hpp"
#include "loop_share.hpp"

#include <immintrin.h>

#include <algorithm>

namespace onednn {

// AVX-512 only, as max_pool_loops.cpp, and for its reasons: elsewhere oneDNN's float32 runs are 8 channels wide,
// and bf16 training needs AVX-512. The pragma reaches every function up to channel_mean_applies (the callers check
// that first); push and pop keep it, the note on passing vectors (none crosses a call outside this file) and
// GCC 12's false -Wmaybe-uninitialized in its AVX-512 intrinsics (bug 105593) out of the files a unity build puts
// after this one.
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
namespace {

constexpr int64_t kMeanParallelMin = 1 << 15;  // values below which one thread is faster than waking a team
constexpr int kMeanItemsPerHandout = 8;        // (example, group) items a thread takes at a time

// 16 values as float32: bf16 widened exactly (its bits are float32's upper half).
inline __m512 widen16(const float* p) { return _mm512_loadu_ps(p); }
inline __m512 widen16(const uint16_t* p) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
// The lanes of `mask` as float32, the others 0.
inline __m512 widen16(const float* p, __mmask16 mask) { return _mm512_maskz_loadu_ps(mask, p); }
inline __m512 widen16(const uint16_t* p, __mmask16 mask) {
  const __m256i h = _mm256_maskz_loadu_epi16(mask, p);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

// The lanes of `mask`, bf16 rounded to nearest even as kernels.hpp's narrow() (a NaN stays a quiet NaN).
inline void narrow16(float* p, __m512 v, __mmask16 mask) { _mm512_mask_storeu_ps(p, mask, v); }
inline void narrow16(uint16_t* p, __m512 v, __mmask16 mask) {
  const __m512i u = _mm512_castps_si512(v);
  const __m512i upper = _mm512_srli_epi32(u, 16);
  const __m512i rounded =
      _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF)),
                                         _mm512_and_si512(upper, _mm512_set1_epi32(1))), 16);
  const __mmask16 nan =
      _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF)), _mm512_set1_epi32(0x7F800000));
  const __m512i bits = _mm512_mask_or_epi32(rounded, nan, upper, _mm512_set1_epi32(0x40));
  _mm256_mask_storeu_epi16(p, mask, _mm512_cvtepi32_epi16(bits));
}

// The lanes of 16 channels starting at c0 that are real channels (not a blocked layout's padding).
inline __mmask16 real_lanes(const ChannelRuns& r, int64_t c0) {
  const int64_t real = std::clamp<int64_t>(r.channels - c0, 0, 16);
  return static_cast<__mmask16>((1u << real) - 1u);
}

template <class T>
void mean_item(const T* x, const ChannelRuns& r, T* mean, int64_t item) {
  const int64_t n = item / r.groups(), g = item % r.groups(), vectors = r.lanes / 16;
  const T* run = x + n * r.example_stride + g * r.group_stride;
  const __m512 positions = _mm512_set1_ps(static_cast<float>(r.positions));
  for (int64_t v = 0; v < vectors; ++v) {
    const int64_t c0 = g * r.lanes + v * 16;
    const __mmask16 real = real_lanes(r, c0);
    if (real == 0) continue;
    __m512 sum = _mm512_setzero_ps();
    for (int64_t p = 0; p < r.positions; ++p) sum = _mm512_add_ps(sum, widen16(run + p * r.position_stride + v * 16));
    narrow16(mean + n * r.channels + c0, _mm512_div_ps(sum, positions), real);
  }
}

template <class T>
void spread_item(const T* dmean, const ChannelRuns& r, T* dx, int64_t item) {
  const int64_t n = item / r.groups(), g = item % r.groups(), vectors = r.lanes / 16;
  T* run = dx + n * r.example_stride + g * r.group_stride;
  const __m512 positions = _mm512_set1_ps(static_cast<float>(r.positions));
  for (int64_t v = 0; v < vectors; ++v) {
    const int64_t c0 = g * r.lanes + v * 16;
    const __mmask16 real = real_lanes(r, c0);
    const __m512 d = _mm512_div_ps(widen16(dmean + n * r.channels + c0, real), positions);
    for (int64_t p = 0; p < r.positions; ++p) narrow16(run + p * r.position_stride + v * 16, d, 0xFFFF);
  }
}

template <class Item>
void each_item(const ChannelRuns& r, Item&& item) {
  const int64_t items = r.examples * r.groups();
  const LoopTicket ticket;
#pragma omp parallel if (items * r.lanes * r.positions >= kMeanParallelMin)
  {
    const LoopShare share(ticket);
#pragma omp for schedule(dynamic, kMeanItemsPerHandout) nowait
    for (int64_t i = 0; i < items; ++i) item(i);
  }
}

}  // namespace

void channel_mean(const void* x, const ChannelRuns& r, void* mean) {
  if (r.type == dt::bf16)
    each_item(r, [&](int64_t i) {
      mean_item(static_cast<const uint16_t*>(x), r, static_cast<uint16_t*>(mean), i);
    });
  else
    each_item(r, [&](int64_t i) { mean_item(static_cast<const float*>(x), r, static_cast<float*>(mean), i); });
}

void channel_mean_backward(const void* dmean, const ChannelRuns& r, void* dx) {
  if (r.type == dt::bf16)
    each_item(r, [&](int64_t i) {
      spread_item(static_cast<const uint16_t*>(dmean), r, static_cast<uint16_t*>(dx), i);
    });
  else
    each_item(r, [&](int64_t i) {
      spread_item(static_cast<const float*>(dmean), r, static_cast<float*>(dx), i);
    });
}

#pragma GCC diagnostic pop
#pragma GCC pop_options

bool channel_mean_applies(const ChannelRuns& r) {
  return avx512_allowed() && (r.lanes == 16 || r.lanes == 32 || r.lanes == 64);
}

}  // namespace onednn
