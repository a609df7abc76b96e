// TFLite's QUANTIZE of the float32 inputs into the u8 domain: round(x / scale) half away from zero, plus the zero
// point, saturated. The plugin is built for baseline x86-64, where std::round is a libm call per element; the
// AVX-512 path computes the same numbers 16 at a time (the same IEEE division; rounding from the exact fraction
// x / scale - trunc(x / scale)).
//
// Header-only: included by qplan.cpp.
#pragma once

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() through, which trips -Wmaybe-uninitialized where they
// are inlined (GCC bug 105593); the whole header is exempt.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace onednn::int8 {

inline uint8_t quantize_one(float x, float scale, float zp) {
  return static_cast<uint8_t>(std::clamp(std::round(x / scale) + zp, 0.0f, 255.0f));
}

__attribute__((target("avx512f"))) inline void quantize_avx512(const float* x, uint8_t* q, int64_t n, float scale,
                                                                 float zp) {
  const __m512 s = _mm512_set1_ps(scale), z = _mm512_set1_ps(zp), half = _mm512_set1_ps(0.5f);
  const __m512 lo = _mm512_setzero_ps(), hi = _mm512_set1_ps(255.0f);
  const __m512i sign = _mm512_set1_epi32(INT32_MIN), one = _mm512_castps_si512(_mm512_set1_ps(1.0f));
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_div_ps(_mm512_loadu_ps(x + i), s);
    const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __mmask16 away = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(v, t)), half, _CMP_GE_OQ);
    const __m512 step = _mm512_castsi512_ps(_mm512_or_si512(_mm512_and_si512(_mm512_castps_si512(v), sign), one));
    __m512 r = _mm512_add_ps(_mm512_mask_add_ps(t, away, t, step), z);
    r = _mm512_min_ps(_mm512_max_ps(r, lo), hi);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i), _mm512_cvtusepi32_epi8(_mm512_cvttps_epi32(r)));
  }
  for (; i < n; ++i) q[i] = quantize_one(x[i], scale, zp);
}

inline bool quantize_avx512_supported() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
}

}  // namespace onednn::int8

#pragma GCC diagnostic pop
