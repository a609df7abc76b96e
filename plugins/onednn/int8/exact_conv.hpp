// conv2d (any groups, strides, padding, dilation) and dense for CPUs whose oneDNN int8 kernels are not exact.
//
// Without VNNI (neither avx512_core_vnni nor avx2_vnni), oneDNN's AVX2 and AVX-512 int8 kernels multiply u8 by s8
// with vpmaddubsw, which adds each pair of products in saturating 16 bits: 255 * 127 * 2 = 64770 does not fit, so
// results come out wrong wherever two large products meet (oneDNN's documentation asks for 7-bit weights, which
// changes the model). Its reference kernels are exact but several hundred times slower.
//
// This step is exact and vectorised: the input, widened to s16 (u8 values 0..255), meets the s8 weights widened to
// s16 through vpmaddwd, whose 32-bit pair sums cannot saturate (2 * 255 * 128 < 2^31); the accumulators are s32,
// as VNNI's. Each output pixel gathers its receptive field (per group) into a contiguous s16 row, padded taps hold
// the input zero point as in TFLite, and that row is dotted against weights packed [tap pairs][output lanes][2].
// The epilogue is oneDNN's: (acc + bias) * scale in f32, clamped, rounded to nearest even; the bias folds in the
// input zero point (an exact integer, -zp * sum w) and the output zero point (zp_out / scale), as weighted.cpp's.
//
// Header-only like small_conv.hpp: weighted.cpp includes it.
#pragma once

#include "small_conv_kernel.hpp"  // pad_image

#include <immintrin.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace onednn::int8 {

// Whether oneDNN's int8 convolution and inner product sum u8 x s8 products exactly on this CPU: VNNI
// (vpdpbusd) accumulates in 32 bits. Asked the way oneDNN decides which kernels to run, so ONEDNN_MAX_CPU_ISA counts.
inline bool onednn_int8_is_exact() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  auto has = [isa](dnnl::cpu_isa want) {
    const auto bits = static_cast<unsigned>(want);
    return (isa & bits) == bits;  // oneDNN's ISA values nest as bit masks
  };
  return has(dnnl::cpu_isa::avx512_core_vnni) || has(dnnl::cpu_isa::avx2_vnni);
}

struct ExactConvShape {
  int64_t H = 1, W = 1, C = 0, F = 0, G = 1;           // input image (nhwc), output channels, groups
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;  // kernel, strides, dilation (1: none)
  int64_t pt = 0, pb = 0, pl = 0, pr = 0;               // padding
  int64_t OH = 1, OW = 1;

  int64_t Cg() const { return C / G; }
  int64_t Fg() const { return F / G; }
  int64_t taps() const { return kh * kw * Cg(); }
  int64_t pairs() const { return (taps() + 1) / 2; }
  int64_t lanes() const { return (Fg() + 7) / 8 * 8; }  // per group, a multiple of 8 s32 lanes
  int64_t padded_w() const { return W + pl + pr; }
  bool padded() const { return pt || pb || pl || pr; }
  // One padded image (SmallConvShape's layout; pad_image fills it).
  SmallConvShape pad_shape() const {
    SmallConvShape s;
    s.H = H, s.W = W, s.C = C, s.pt = pt, s.pb = pb, s.pl = pl, s.pr = pr;
    return s;
  }
};

struct ExactConvWeights {
  std::vector<int16_t> packed;     // [G][pairs][lanes][2]
  std::vector<int32_t> int_bias;   // [G * lanes]: bias - zp_in * sum w, exact
  std::vector<float> bias, scale;  // [G * lanes]: zp_out / scale, and the output scales
  float lo = 0, hi = 255;          // the u8 clamp (saturation and a fused relu/relu6)
};

// `kernel` in the IR's layout: conv HWIO [kh][kw][Cg][F] (F = G * Fg, group-major), dense [K][units].
inline void pack_exact_weights(const ExactConvShape& s, const int8_t* kernel, const int32_t* bias,
                               const std::vector<float>& scales, int32_t zp_in, int32_t zp_out, ExactConvWeights& w) {
  const int64_t G = s.G, P = s.pairs(), L = s.lanes(), Fg = s.Fg(), T = s.taps();
  w.packed.assign(static_cast<size_t>(G * P * L * 2), 0);
  w.int_bias.assign(static_cast<size_t>(G * L), 0);
  w.bias.assign(static_cast<size_t>(G * L), 0.0f);
  w.scale.assign(static_cast<size_t>(G * L), 0.0f);
  for (int64_t g = 0; g < G; ++g)
    for (int64_t f = 0; f < Fg; ++f) {
      const int64_t oc = g * Fg + f;
      int64_t sum = 0;
      for (int64_t t = 0; t < T; ++t) {  // t runs over (ky, kx, c) as the gathered row does
        const int8_t v = kernel[t * s.F + oc];
        sum += v;
        w.packed[static_cast<size_t>(((g * P + t / 2) * L + f) * 2 + t % 2)] = v;
      }
      const auto at = static_cast<size_t>(g * L + f);
      const float scale = scales.size() == 1 ? scales[0] : scales[static_cast<size_t>(oc)];
      w.int_bias[at] = static_cast<int32_t>((bias ? bias[oc] : 0) - zp_in * sum);
      w.bias[at] = static_cast<float>(zp_out) / scale;
      w.scale[at] = scale;
    }
}

// acc[0, L) = sum over pairs p of x[2p] * w[p][l][0] + x[2p + 1] * w[p][l][1].
__attribute__((target("avx2"))) inline void exact_dot_avx2(const int16_t* x, int64_t P, const int16_t* w, int64_t L,
                                                             int32_t* acc) {
  int64_t l = 0;
  for (; l + 32 <= L; l += 32) {
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t p = 0; p < P; ++p) {
      int32_t pair;
      std::memcpy(&pair, x + 2 * p, 4);
      const __m256i b = _mm256_set1_epi32(pair);
      const int16_t* row = w + (p * L + l) * 2;
      a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(b, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row))));
      a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(b, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 16))));
      a2 = _mm256_add_epi32(a2, _mm256_madd_epi16(b, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 32))));
      a3 = _mm256_add_epi32(a3, _mm256_madd_epi16(b, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 48))));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + l), a0);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + l + 8), a1);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + l + 16), a2);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + l + 24), a3);
  }
  for (; l < L; l += 8) {
    __m256i a0 = _mm256_setzero_si256();
    for (int64_t p = 0; p < P; ++p) {
      int32_t pair;
      std::memcpy(&pair, x + 2 * p, 4);
      const __m256i b = _mm256_set1_epi32(pair);
      const int16_t* row = w + (p * L + l) * 2;
      a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(b, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row))));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + l), a0);
  }
}

// The same sums, portably (a CPU without AVX2).
inline void exact_dot_scalar(const int16_t* x, int64_t P, const int16_t* w, int64_t L, int32_t* acc) {
  std::fill(acc, acc + L, 0);
  for (int64_t p = 0; p < P; ++p)
    for (int64_t l = 0; l < L; ++l)
      acc[l] += int32_t{x[2 * p]} * w[(p * L + l) * 2] + int32_t{x[2 * p + 1]} * w[(p * L + l) * 2 + 1];
}

// out[0, F) = clamp((acc + int_bias) + bias) * scale to [lo, hi], rounded to nearest even (the MXCSR default).
__attribute__((target("avx2"))) inline void exact_epilogue_avx2(const int32_t* acc, const int32_t* int_bias,
                                                                  const float* bias, const float* scale, float lo,
                                                                  float hi, int64_t F, uint8_t* out) {
  const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
  int64_t f = 0;
  for (; f + 8 <= F; f += 8) {
    const __m256i a = _mm256_add_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + f)),
                                       _mm256_loadu_si256(reinterpret_cast<const __m256i*>(int_bias + f)));
    __m256 v = _mm256_add_ps(_mm256_cvtepi32_ps(a), _mm256_loadu_ps(bias + f));
    v = _mm256_mul_ps(v, _mm256_loadu_ps(scale + f));
    v = _mm256_min_ps(_mm256_max_ps(v, vlo), vhi);
    const __m256i q = _mm256_cvtps_epi32(v);  // 0..255
    const __m128i w16 = _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + f), _mm_packus_epi16(w16, w16));
  }
  for (; f < F; ++f) {
    const float v = (static_cast<float>(acc[f] + int_bias[f]) + bias[f]) * scale[f];
    out[f] = static_cast<uint8_t>(std::nearbyint(std::min(std::max(v, lo), hi)));
  }
}

inline void exact_epilogue_scalar(const int32_t* acc, const int32_t* int_bias, const float* bias, const float* scale,
                                  float lo, float hi, int64_t F, uint8_t* out) {
  for (int64_t f = 0; f < F; ++f) {
    const float v = (static_cast<float>(acc[f] + int_bias[f]) + bias[f]) * scale[f];
    out[f] = static_cast<uint8_t>(std::nearbyint(std::min(std::max(v, lo), hi)));
  }
}

struct ExactKernels {
  void (*dot)(const int16_t*, int64_t, const int16_t*, int64_t, int32_t*);
  void (*epilogue)(const int32_t*, const int32_t*, const float*, const float*, float, float, int64_t, uint8_t*);
};
inline ExactKernels exact_kernels() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) return {exact_dot_avx2, exact_epilogue_avx2};
  return {exact_dot_scalar, exact_epilogue_scalar};
}

// `src` [N, H, W, C] u8 to `dst` [N, OH, OW, F] u8, images split across the OpenMP threads. `scratch` holds, per
// thread, one padded image, one gathered row and the accumulators (grown only when the thread count grew).
inline void exact_conv_forward(const ExactConvShape& s, int64_t N, const uint8_t* src, uint8_t zp_in,
                               const ExactConvWeights& w, uint8_t* dst, std::vector<uint8_t>& scratch) {
  static const ExactKernels k = exact_kernels();
  const SmallConvShape ps = s.pad_shape();
  const int64_t P = s.pairs(), L = s.lanes(), Cg = s.Cg(), Fg = s.Fg(), pw = s.padded_w();
  const int64_t image_bytes = s.padded() ? (ps.padded_bytes() + 63) / 64 * 64 : 0;
  const int64_t row_bytes = (P * 2 * 2 + 63) / 64 * 64, acc_bytes = (L * 4 + 63) / 64 * 64;
  const int64_t per_thread = image_bytes + row_bytes + acc_bytes;
  const auto threads = static_cast<size_t>(std::max(omp_get_max_threads(), 1));
  if (scratch.size() < threads * static_cast<size_t>(per_thread) + 64) scratch.resize(threads * per_thread + 64, 0);
  const auto base_at = reinterpret_cast<uintptr_t>(scratch.data());
  uint8_t* const base = scratch.data() + (64 - base_at % 64) % 64;
  const int64_t in_image = s.H * s.W * s.C, out_pixels = s.OH * s.OW;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t n = 0; n < N; ++n) {
    uint8_t* mine = base + omp_get_thread_num() * per_thread;
    const uint8_t* image = src + n * in_image;
    if (s.padded()) {
      pad_image(ps, image, zp_in, mine);
      image = mine;
    }
    auto* row = reinterpret_cast<int16_t*>(mine + image_bytes);
    auto* acc = reinterpret_cast<int32_t*>(mine + image_bytes + row_bytes);
    row[2 * P - 1] = 0;  // an odd tap count's last pair meets zero weights
    for (int64_t o = 0; o < out_pixels; ++o) {
      const int64_t oy = o / s.OW, ox = o % s.OW;
      uint8_t* out = dst + (n * out_pixels + o) * s.F;
      for (int64_t g = 0; g < s.G; ++g) {
        int16_t* r = row;
        for (int64_t ky = 0; ky < s.kh; ++ky) {
          const uint8_t* line = image + ((oy * s.sh + ky * s.dh) * pw + ox * s.sw) * s.C + g * Cg;
          for (int64_t kx = 0; kx < s.kw; ++kx, r += Cg) {
            const uint8_t* px = line + kx * s.dw * s.C;
            for (int64_t c = 0; c < Cg; ++c) r[c] = px[c];
          }
        }
        k.dot(row, P, w.packed.data() + g * P * L * 2, L, acc);
        const int64_t at = g * L;
        k.epilogue(acc, w.int_bias.data() + at, w.bias.data() + at, w.scale.data() + at, w.lo, w.hi, Fg, out + g * Fg);
      }
    }
  }
}

}  // namespace onednn::int8
