// A convolution with few input values per kernel row (kw * C <= 16: a first layer on a grey or RGB image), with
// an optional max pool fused over its output, on AVX-512 VNNI. oneDNN's VNNI kernels multiply groups of 4 input
// channels, so with C = 1 they waste 3 of every 4 lanes and write a full-size output for the pool to read again.
//
// Here the 4-byte groups run along a kernel row instead: in nhwc, the kw * C values a kernel row covers are
// contiguous, so each group is one unaligned 4-byte load broadcast to all lanes, and the lanes are 16 output
// channels (their s8 weights for those 4 bytes, zero past the row's end). The arithmetic is oneDNN's: the same s32
// accumulators, then (acc + bias) * scale in f32, clamped and rounded to nearest even. Max pooling commutes with
// that requantization (it is monotonic: scales are positive), so the pool takes the maximum accumulator and
// requantizes once.
//
// Header-only: included by the one file that builds the step (weighted.cpp).
#pragma once

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() through, which trips -Wmaybe-uninitialized where they
// are inlined (GCC bug 105593); the whole header is exempt.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace onednn::int8 {

struct SmallConvShape {
  int64_t H = 0, W = 0, C = 0;              // input image (nhwc)
  int64_t kh = 0, kw = 0, sh = 1, sw = 1;   // kernel and strides; dilation 1
  int64_t pt = 0, pb = 0, pl = 0, pr = 0;   // padding; padded taps read the input zero point, as in TFLite
  int64_t F = 0;                            // output channels
  int64_t pkh = 1, pkw = 1, psh = 1, psw = 1;  // the fused max pool's window and strides (1x1: no pool)
  int64_t PH = 0, PW = 0;                   // the step's output: pooled (or plain convolution) height and width

  static constexpr int64_t max_groups = 64;  // 4-byte groups per kernel window that the kernel takes

  int64_t groups_per_row() const { return (kw * C + 3) / 4; }
  int64_t groups() const { return kh * groups_per_row(); }
  int64_t lane_blocks() const { return (F + 15) / 16; }
  int64_t padded_w() const { return W + pl + pr; }
  // One padded image, plus the 3 bytes a row's last group may read past it (their weights are zero).
  int64_t padded_bytes() const { return ((H + pt + pb) * padded_w() * C + 3 + 63) / 64 * 64; }
};

// The kernel's weights and per-channel epilogue, rebuilt from the IR's parameters when they change.
struct SmallConvWeights {
  std::vector<int8_t> storage;  // [kh][groups_per_row][lane_blocks][16 lanes][4 bytes], 64-byte aligned inside
  std::vector<float> bias, scale;  // lane_blocks * 16 each; padding lanes 0
  float lo = 0, hi = 255;          // the u8 clamp (saturation and a fused relu/relu6)

  const int8_t* packed() const {
    const auto at = reinterpret_cast<uintptr_t>(storage.data());
    return storage.data() + ((64 - at % 64) % 64);
  }
  int8_t* packed() { return const_cast<int8_t*>(static_cast<const SmallConvWeights&>(*this).packed()); }
};

// `hwio` is the IR's kernel [kh, kw, C, F]. Taps past a row's kw * C values and lanes past F get zero weights.
inline void pack_small_conv_weights(const SmallConvShape& s, const int8_t* hwio, SmallConvWeights& w) {
  const int64_t G = s.groups_per_row(), NF = s.lane_blocks(), row = s.kw * s.C;
  w.storage.assign(static_cast<size_t>(s.kh * G * NF * 64 + 63), 0);
  int8_t* out = w.packed();
  for (int64_t ky = 0; ky < s.kh; ++ky)
    for (int64_t g = 0; g < G; ++g)
      for (int64_t j = 0; j < NF; ++j)
        for (int64_t lane = 0; lane < 16; ++lane)
          for (int64_t byte = 0; byte < 4; ++byte) {
            const int64_t tap = g * 4 + byte, oc = j * 16 + lane;
            if (tap >= row || oc >= s.F) continue;
            out[(((ky * G + g) * NF + j) * 16 + lane) * 4 + byte] = hwio[(ky * row + tap) * s.F + oc];
          }
}

inline bool small_conv_cpu_supported() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
}

#define RAMJET_INT8_AVX512_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

// One padded image to its [PH, PW, F] u8 output. NF (lane blocks) is a template argument so the accumulators
// stay in registers; so is the window's group count T where it is small (FixedT > 0): the loop over it unrolls and
// the weights stay in registers too, since reloading them, not multiplying, bounds the loop otherwise. FixedPool
// (1: none, 2: 2x2; 0: read from `s`) unrolls the pool window for the common cases.
template <int NF, int FixedT, int FixedPool>
RAMJET_INT8_AVX512_VNNI void small_conv_image(const SmallConvShape& s, const uint8_t* image, const SmallConvWeights& w,
                                              uint8_t* dst) {
  const int64_t G = s.groups_per_row(), C = s.C, Wp = s.padded_w(), T = FixedT > 0 ? FixedT : s.groups();
  const int64_t pkh = FixedPool > 0 ? FixedPool : s.pkh, pkw = FixedPool > 0 ? FixedPool : s.pkw;
  // Where each 4-byte group of the kernel window starts, from the window's top-left corner.
  int64_t offsets[SmallConvShape::max_groups];
  for (int64_t ky = 0; ky < s.kh; ++ky)
    for (int64_t g = 0; g < G; ++g) offsets[ky * G + g] = ky * Wp * C + g * 4;
  const auto* weights = reinterpret_cast<const __m512i*>(w.packed());
  __m512i held[FixedT > 0 ? FixedT * NF : 1];
  if constexpr (FixedT > 0)
    for (int i = 0; i < FixedT * NF; ++i) held[i] = _mm512_load_si512(weights + i);
  const __m512 lo = _mm512_set1_ps(w.lo), hi = _mm512_set1_ps(w.hi);
  const int64_t last_lanes = s.F - (NF - 1) * 16;
  const __mmask16 last_mask = static_cast<__mmask16>(last_lanes >= 16 ? 0xFFFF : (1u << last_lanes) - 1);
  for (int64_t py = 0; py < s.PH; ++py)
    for (int64_t px = 0; px < s.PW; ++px) {
      __m512i best[NF];
#pragma GCC unroll 4
      for (int64_t wy = 0; wy < pkh; ++wy)
#pragma GCC unroll 4
        for (int64_t wx = 0; wx < pkw; ++wx) {
          const int64_t oy = py * s.psh + wy, ox = px * s.psw + wx;
          const uint8_t* corner = image + (oy * s.sh * Wp + ox * s.sw) * C;
          __m512i acc[NF];
          for (int j = 0; j < NF; ++j) acc[j] = _mm512_setzero_si512();
#pragma GCC unroll 16
          for (int64_t t = 0; t < T; ++t) {
            int32_t four;
            std::memcpy(&four, corner + offsets[t], 4);
            const __m512i x = _mm512_set1_epi32(four);
            for (int j = 0; j < NF; ++j) {
              __m512i weight;
              if constexpr (FixedT > 0)
                weight = held[t * NF + j];
              else
                weight = _mm512_load_si512(weights + t * NF + j);
              acc[j] = _mm512_dpbusd_epi32(acc[j], x, weight);
            }
          }
          for (int j = 0; j < NF; ++j) best[j] = (wy | wx) == 0 ? acc[j] : _mm512_max_epi32(best[j], acc[j]);
        }
      uint8_t* out = dst + (py * s.PW + px) * s.F;
      for (int j = 0; j < NF; ++j) {
        __m512 v = _mm512_cvtepi32_ps(best[j]);
        v = _mm512_mul_ps(_mm512_add_ps(v, _mm512_loadu_ps(w.bias.data() + j * 16)),
                          _mm512_loadu_ps(w.scale.data() + j * 16));
        v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);  // integer bounds: clamping before rounding is the same
        const __m128i q = _mm512_cvtusepi32_epi8(_mm512_cvtps_epi32(v));  // MXCSR: round to nearest even
        if (j < NF - 1)
          _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j * 16), q);
        else
          _mm_mask_storeu_epi8(out + j * 16, last_mask, q);
      }
    }
}

using SmallConvImageFn = void (*)(const SmallConvShape&, const uint8_t*, const SmallConvWeights&, uint8_t*);

// The fixed group counts cover the usual first layers (1x1, 2x2 and 3x3 kernels on 1 to 3 channels); the other
// shapes take the general loops.
template <int NF, int FixedT>
SmallConvImageFn small_conv_image_for_pool(const SmallConvShape& s) {
  if (s.pkh == 2 && s.pkw == 2) return &small_conv_image<NF, FixedT, 2>;
  if (s.pkh == 1 && s.pkw == 1) return &small_conv_image<NF, FixedT, 1>;
  return &small_conv_image<NF, FixedT, 0>;
}

template <int NF>
SmallConvImageFn small_conv_image_for_groups(const SmallConvShape& s) {
  switch (s.groups()) {
    case 1: return small_conv_image_for_pool<NF, 1>(s);
    case 2: return small_conv_image_for_pool<NF, 2>(s);
    case 3: return small_conv_image_for_pool<NF, 3>(s);
    case 4: return small_conv_image_for_pool<NF, 4>(s);
    case 6: return small_conv_image_for_pool<NF, 6>(s);
    case 9: return small_conv_image_for_pool<NF, 9>(s);
    default: return &small_conv_image<NF, 0, 0>;
  }
}

inline SmallConvImageFn small_conv_image_for(const SmallConvShape& s) {
  switch (s.lane_blocks()) {
    case 1: return small_conv_image_for_groups<1>(s);
    case 2: return small_conv_image_for_groups<2>(s);
    case 3: return small_conv_image_for_groups<3>(s);
    default: return small_conv_image_for_groups<4>(s);
  }
}

// Copies one image into `padded` with its border set to the input zero point.
inline void pad_image(const SmallConvShape& s, const uint8_t* src, uint8_t pad_value, uint8_t* padded) {
  const int64_t row = s.W * s.C, prow = s.padded_w() * s.C;
  if (s.pt == 0 && s.pb == 0 && s.pl == 0 && s.pr == 0) {
    std::memcpy(padded, src, static_cast<size_t>(s.H * row));
    return;
  }
  std::memset(padded, pad_value, static_cast<size_t>((s.H + s.pt + s.pb) * prow));
  for (int64_t y = 0; y < s.H; ++y)
    std::memcpy(padded + (y + s.pt) * prow + s.pl * s.C, src + y * row, static_cast<size_t>(row));
}

// `src` [N, H, W, C] u8 to `dst` [N, PH, PW, F] u8, images split across the OpenMP threads; `scratch` holds one
// padded image per thread (grown here only when the thread count grew).
inline void small_conv_forward(const SmallConvShape& s, int64_t N, const uint8_t* src, uint8_t pad_value,
                               const SmallConvWeights& w, uint8_t* dst, std::vector<uint8_t>& scratch) {
  const int64_t per_thread = s.padded_bytes();
  const auto threads = static_cast<size_t>(std::max(omp_get_max_threads(), 1));
  if (scratch.size() < threads * static_cast<size_t>(per_thread)) scratch.resize(threads * per_thread, 0);
  const int64_t in_image = s.H * s.W * s.C, out_image = s.PH * s.PW * s.F;
  uint8_t* const scratch_base = scratch.data();
  const SmallConvImageFn image_fn = small_conv_image_for(s);
  // Dynamic: a thread that wakes late (the first parallel region of a forward) finds the others already working.
#pragma omp parallel for schedule(dynamic, 4)
  for (int64_t n = 0; n < N; ++n) {
    uint8_t* padded = scratch_base + omp_get_thread_num() * per_thread;
    pad_image(s, src + n * in_image, pad_value, padded);
    image_fn(s, padded, w, dst + n * out_image);
  }
}

}  // namespace onednn::int8

#pragma GCC diagnostic pop
