// A depthwise convolution (one filter per channel, depth multiplier 1, kernel height at most 4) on u8 nhwc
// activations and s8 weights, on AVX-512 VNNI with VBMI. oneDNN 2.6's u8 depthwise kernel (brdgmm_dw) is bound by
// its own instructions: a MobileNet's 64-channel 3x3 layer at 14 x 14 took as long on 16 examples whose data sat in
// the L2 cache (0.083 ms on one Zen 4 core) as its share of a batch of 256 that did not.
//
// vpdpbusd adds four u8 x s8 products into each 32-bit lane. Here those four are the kernel's rows: for each output
// row and each input column, the kh input rows' bytes of 16 channels are interleaved into one vector (one vpermt2b),
// [row 0, row 1, row 2, 0] per channel; an output pixel is then kw vpdpbusd of those column vectors against the
// block's weights arranged the same way. That is 3 instructions a pixel for a 3x3 kernel where multiply-adds in
// float take 9. Padding reads the input zero point (as TFLite pads), whose share of the sums the bias takes off;
// the sums are exact s32, and the epilogue is oneDNN's, as in the small convolution: (acc + bias) * scale in f32,
// clamped, rounded to nearest even.
//
// Header-only: included by the one file that builds the step (weighted.cpp).
#pragma once

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() through, which trips -Wmaybe-uninitialized where they
// are inlined (GCC bug 105593); the whole header is exempt.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <dnnl.hpp>
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace onednn::int8 {

struct DepthwiseShape {
  int64_t H = 0, W = 0, C = 0;             // input image (nhwc); the output has C channels too
  int64_t kh = 0, kw = 0, sh = 1, sw = 1;  // kernel (kh <= 4) and strides; dilation 1
  int64_t pt = 0, pb = 0, pl = 0, pr = 0;  // padding; padded taps read the input zero point, as in TFLite
  int64_t OH = 0, OW = 0;

  static constexpr int64_t max_kh = 4;  // rows a 4-byte group holds

  int64_t blocks() const { return (C + 15) / 16; }
  int64_t padded_w() const { return W + pl + pr; }
};

// The kernel's weights and per-channel epilogue, rebuilt from the IR's parameters when they change.
struct DepthwiseWeights {
  std::vector<int8_t> storage;     // [blocks][kw][16 lanes][4 rows], 64-byte aligned inside; 0 past kh and C
  std::vector<float> bias, scale;  // blocks * 16 each; the bias with the input zero point's share taken off
  float lo = 0, hi = 255;          // the u8 clamp (saturation and a fused relu/relu6)

  const int8_t* packed() const {
    const auto at = reinterpret_cast<uintptr_t>(storage.data());
    return storage.data() + ((64 - at % 64) % 64);
  }
  int8_t* packed() { return const_cast<int8_t*>(static_cast<const DepthwiseWeights&>(*this).packed()); }
};

// `hwio` is the IR's kernel [kh, kw, 1, C].
inline void pack_depthwise_weights(const DepthwiseShape& s, const int8_t* hwio, DepthwiseWeights& w) {
  w.storage.assign(static_cast<size_t>(s.blocks() * s.kw * 64 + 63), 0);
  int8_t* out = w.packed();
  for (int64_t b = 0; b < s.blocks(); ++b)
    for (int64_t kx = 0; kx < s.kw; ++kx)
      for (int64_t lane = 0; lane < 16 && b * 16 + lane < s.C; ++lane)
        for (int64_t ky = 0; ky < s.kh; ++ky)
          out[((b * s.kw + kx) * 16 + lane) * 4 + ky] = hwio[(ky * s.kw + kx) * s.C + b * 16 + lane];
}

// oneDNN's own judgement of the CPU (so ONEDNN_MAX_CPU_ISA below AVX-512 VNNI sends depthwise layers back to the
// other paths, as ctest's Int8WithoutVnni runs them), and VBMI for the byte permutation.
inline bool depthwise_cpu_supported() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto vnni = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_vnni);
  __builtin_cpu_init();
  return (isa & vnni) == vnni && __builtin_cpu_supports("avx512vbmi");  // oneDNN's ISA values nest as bit masks
}

#define RAMJET_INT8_DEPTHWISE __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi")))

// Everything one block of 16 channels of one image needs.
struct DepthwiseBlock {
  const DepthwiseShape& s;
  const uint8_t* image;    // the input image at the block's first channel
  uint8_t* out;            // the output image at the block's first channel
  const __m512i* weights;  // [kw]
  __mmask16 mask;          // the block's channels
  __m512 bias, scale, lo, hi;
  __m128i zero_point;      // 16 input zero points: what a padded row reads
  __m512i zero_columns;    // a column vector of padding: zero points in the kernel's rows, 0 past them
  __m512i* columns;        // scratch: [padded_w] column vectors of the current output row
};

// The column vectors of output row oy: for each padded column, the kh input rows' 16 channels interleaved. KH > 0
// fixes the kernel's height so that the loops over rows unroll.
template <int KH>
RAMJET_INT8_DEPTHWISE __attribute__((always_inline)) inline void depthwise_columns(const DepthwiseBlock& k, int64_t oy) {
  const DepthwiseShape& s = k.s;
  const int64_t kh = KH > 0 ? KH : s.kh;
  // Byte 4c + r of a column vector is channel c of row r. Rows 0 and 1 sit in the first source's 128-bit lanes 0
  // and 1, rows 2 and 3 in the second's (indices 64 on); a row past kh is zero.
  alignas(64) static constexpr uint8_t kInterleave[64] = {
      0,  16, 64, 80, 1,  17, 65, 81, 2,  18, 66, 82, 3,  19, 67, 83, 4,  20, 68, 84, 5,  21, 69, 85,
      6,  22, 70, 86, 7,  23, 71, 87, 8,  24, 72, 88, 9,  25, 73, 89, 10, 26, 74, 90, 11, 27, 75, 91,
      12, 28, 76, 92, 13, 29, 77, 93, 14, 30, 78, 94, 15, 31, 79, 95};
  const __m512i interleave = _mm512_load_si512(kInterleave);
  const uint8_t* rows[DepthwiseShape::max_kh] = {nullptr, nullptr, nullptr, nullptr};
  bool any_row = false;
#pragma GCC unroll 4
  for (int64_t r = 0; r < kh; ++r) {
    const int64_t iy = oy * s.sh - s.pt + r;
    rows[r] = iy >= 0 && iy < s.H ? k.image + iy * s.W * s.C : nullptr;
    any_row = any_row || rows[r] != nullptr;
  }
  // Locals throughout: every store below goes through a type that may alias anything, so fields read through
  // `k` or `s` would be read again after each.
  const int64_t Wp = s.padded_w(), pl = s.pl, W = s.W, C = s.C;
  const __mmask16 mask = k.mask;
  const __m128i zp = k.zero_point, none = _mm_setzero_si128();
  __m512i* const columns = k.columns;
  const __m512i padding = k.zero_columns;
  if (!any_row) {
    for (int64_t xp = 0; xp < Wp; ++xp) columns[xp] = padding;
    return;
  }
  for (int64_t xp = 0; xp < pl; ++xp) columns[xp] = padding;
  for (int64_t xp = pl + W; xp < Wp; ++xp) columns[xp] = padding;
  const uint8_t *row0 = rows[0], *row1 = rows[1], *row2 = rows[2], *row3 = rows[3];
  for (int64_t x = 0; x < W; ++x) {
    const __m128i r0 = row0 ? _mm_maskz_loadu_epi8(mask, row0 + x * C) : zp;
    const __m128i r1 = kh < 2 ? none : row1 ? _mm_maskz_loadu_epi8(mask, row1 + x * C) : zp;
    const __m128i r2 = kh < 3 ? none : row2 ? _mm_maskz_loadu_epi8(mask, row2 + x * C) : zp;
    const __m128i r3 = kh < 4 ? none : row3 ? _mm_maskz_loadu_epi8(mask, row3 + x * C) : zp;
    const __m512i low = _mm512_castsi256_si512(_mm256_inserti128_si256(_mm256_castsi128_si256(r0), r1, 1));
    const __m512i high = _mm512_castsi256_si512(_mm256_inserti128_si256(_mm256_castsi128_si256(r2), r3, 1));
    columns[pl + x] = _mm512_permutex2var_epi8(low, interleave, high);
  }
}

// Sums N pixels of row oy from column ox on, side by side, and writes them. KW > 0 fixes the kernel's width.
template <int KW, int N>
RAMJET_INT8_DEPTHWISE __attribute__((always_inline)) inline void depthwise_pixels(const DepthwiseBlock& k, int64_t oy, int64_t ox) {
  const DepthwiseShape& s = k.s;
  // Locals: the stores below are bytes, which may alias anything, so fields read through `k` or `s` would be
  // read again after each.
  const int64_t kw = KW > 0 ? KW : s.kw, sw = s.sw, C = s.C;
  const __mmask16 mask = k.mask;
  const __m512 bias = k.bias, scale = k.scale, lo = k.lo, hi = k.hi;
  uint8_t* const out = k.out + (oy * s.OW + ox) * C;
  __m512i acc[N];
#pragma GCC unroll 8
  for (int r = 0; r < N; ++r) acc[r] = _mm512_setzero_si512();
  const __m512i* first = k.columns + ox * sw;
#pragma GCC unroll 8
  for (int64_t kx = 0; kx < kw; ++kx) {
    const __m512i weight = _mm512_load_si512(k.weights + kx);
#pragma GCC unroll 8
    for (int r = 0; r < N; ++r) acc[r] = _mm512_dpbusd_epi32(acc[r], first[r * sw + kx], weight);
  }
#pragma GCC unroll 8
  for (int r = 0; r < N; ++r) {
    __m512 v = _mm512_mul_ps(_mm512_add_ps(_mm512_cvtepi32_ps(acc[r]), bias), scale);
    v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);  // integer bounds: clamping before rounding is the same
    __m128i q = _mm512_cvtusepi32_epi8(_mm512_cvtps_epi32(v));  // MXCSR: round to nearest even
    // Kept apart from the store: GCC would fuse the two into vpmovusdb to memory, microcoded and several times
    // slower on Zen 4.
    asm("" : "+v"(q));
    _mm_mask_storeu_epi8(out + r * C, mask, q);
  }
}

// One block of one image. KH, KW > 0 fix the kernel's size so that its loops unroll.
template <int KH, int KW>
RAMJET_INT8_DEPTHWISE void depthwise_block(const DepthwiseBlock& k) {
  const DepthwiseShape& s = k.s;
  const int64_t full = s.OW / 8 * 8;
  for (int64_t oy = 0; oy < s.OH; ++oy) {
    depthwise_columns<KH>(k, oy);
    for (int64_t ox = 0; ox < full; ox += 8) depthwise_pixels<KW, 8>(k, oy, ox);
    // The rest of the row in one call, its pixels side by side too.
    switch (s.OW - full) {
      case 1: depthwise_pixels<KW, 1>(k, oy, full); break;
      case 2: depthwise_pixels<KW, 2>(k, oy, full); break;
      case 3: depthwise_pixels<KW, 3>(k, oy, full); break;
      case 4: depthwise_pixels<KW, 4>(k, oy, full); break;
      case 5: depthwise_pixels<KW, 5>(k, oy, full); break;
      case 6: depthwise_pixels<KW, 6>(k, oy, full); break;
      case 7: depthwise_pixels<KW, 7>(k, oy, full); break;
      default: break;
    }
  }
}

// One image and block: the constants its pixels share, then its rows.
RAMJET_INT8_DEPTHWISE inline void depthwise_image_block(const DepthwiseShape& s, const uint8_t* image, uint8_t zero_point,
                                                        const DepthwiseWeights& w, int64_t block, uint8_t* out,
                                                        __m512i* columns) {
  const int64_t lanes = std::min<int64_t>(16, s.C - block * 16);
  // The padding's column vector: zero-point bytes in the kernel's rows, zero in the unused fourth.
  const uint32_t zp = zero_point;
  uint32_t pad_group = 0;
  for (int64_t r = 0; r < s.kh; ++r) pad_group |= zp << (8 * r);
  const DepthwiseBlock k{s,
                         image + block * 16,
                         out + block * 16,
                         reinterpret_cast<const __m512i*>(w.packed()) + block * s.kw,
                         static_cast<__mmask16>(lanes == 16 ? 0xFFFF : (1u << lanes) - 1),
                         _mm512_loadu_ps(w.bias.data() + block * 16),
                         _mm512_loadu_ps(w.scale.data() + block * 16),
                         _mm512_set1_ps(w.lo),
                         _mm512_set1_ps(w.hi),
                         _mm_set1_epi8(static_cast<char>(zero_point)),
                         _mm512_set1_epi32(static_cast<int32_t>(pad_group)),
                         columns};
  if (s.kh == 3 && s.kw == 3)
    depthwise_block<3, 3>(k);
  else
    depthwise_block<0, 0>(k);
}

// `src` [N, H, W, C] u8 to `dst` [N, OH, OW, C] u8, (image, block of channels) pairs split across the OpenMP
// threads; `scratch` holds each thread's column vectors (grown here only when the thread count grew).
inline void depthwise_forward(const DepthwiseShape& s, int64_t N, const uint8_t* src, uint8_t zero_point,
                              const DepthwiseWeights& w, uint8_t* dst, std::vector<uint8_t>& scratch) {
  const int64_t per_thread = s.padded_w() * 64;
  const auto threads = static_cast<size_t>(std::max(omp_get_max_threads(), 1));
  if (scratch.size() < threads * static_cast<size_t>(per_thread) + 64) scratch.resize(threads * per_thread + 64);
  const auto at = reinterpret_cast<uintptr_t>(scratch.data());
  uint8_t* const scratch_base = scratch.data() + (64 - at % 64) % 64;
  const int64_t in_image = s.H * s.W * s.C, out_image = s.OH * s.OW * s.C, blocks = s.blocks();
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n = 0; n < N; ++n)
    for (int64_t b = 0; b < blocks; ++b) {
      auto* columns = reinterpret_cast<__m512i*>(scratch_base + omp_get_thread_num() * per_thread);
      depthwise_image_block(s, src + n * in_image, zero_point, w, b, dst + n * out_image, columns);
    }
}

}  // namespace onednn::int8

#pragma GCC diagnostic pop
