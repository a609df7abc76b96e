#include "max_pool_loops.hpp"

#include "isa.hpp"

#include <immintrin.h>

#include <array>
#include <cstring>

namespace onednn {
namespace {

// The loops are AVX-512 only: elsewhere oneDNN lays float32 channels out in runs of 8, which they do not read, and
// bf16 training needs AVX-512. `ONEDNN_MAX_CPU_ISA` below AVX-512 turns them off as it caps oneDNN. The target
// pragma (not a function attribute) reaches the lambdas inside them too; push and pop keep it, and the note that
// passing a vector would change with the target's ABI (no vector crosses a call outside these loops), and GCC 12's
// false -Wmaybe-uninitialized in its AVX-512 intrinsics (bug 105593), out of the files a unity build puts after
// this one.
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// Calls window(corner, out) for every output run: the input offset of its window's first value and its own.
// The loops below walk a local copy of their PoolLoops: their stores could otherwise alias the caller's and make
// the compiler read the geometry again at every step.
template <class Window>
[[gnu::always_inline]] inline void each_window(const PoolLoops& w, Window&& window) {
  for (int64_t n = 0; n < w.examples; ++n)
    for (int64_t g = 0; g < w.groups; ++g) {
      const int64_t in0 = n * w.in_example + g * w.in_group, out0 = n * w.out_example + g * w.out_group;
      for (int64_t oh = 0; oh < w.out_rows; ++oh)
        for (int64_t ow = 0; ow < w.out_columns; ++ow)
          window(in0 + (oh * w.stride_rows * w.columns + ow * w.stride_columns) * w.in_position,
                 out0 + (oh * w.out_columns + ow) * w.out_position);
    }
}

// The offsets of a window's values (row-major) from its first; windows hold at most 255.
inline int window_offsets(const PoolLoops& w, int64_t* offsets) {
  int k = 0;
  for (int64_t kh = 0; kh < w.kernel_rows; ++kh)
    for (int64_t kw = 0; kw < w.kernel_columns; ++kw) offsets[k++] = (kh * w.columns + kw) * w.in_position;
  return k;
}

// 16 values as float32: bf16 widened exactly (its bits are float32's upper half).
inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
inline __m512 load16(const uint16_t* p) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
// Stores what load16 gave (for bf16 the upper half is the value itself, exactly).
inline void store16(float* p, __m512 v) { _mm512_storeu_ps(p, v); }
inline void store16(uint16_t* p, __m512 v) {
  const __m256i upper = _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(v), 16));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), upper);
}

template <class T>
inline void forward(const PoolLoops& p, const T* src, T* dst, uint8_t* argmax) {
  const PoolLoops w = p;
  int64_t offsets[255];
  const int taps = window_offsets(w, offsets);
  each_window(w, [&](int64_t corner, int64_t out) [[gnu::always_inline]] {
    __m512 best = load16(src + corner);
    __m512i place = _mm512_setzero_si512();
    for (int k = 1; k < taps; ++k) {
      const __m512 v = load16(src + corner + offsets[k]);
      const __mmask16 greater = _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ);  // a NaN is never greater
      best = _mm512_mask_mov_ps(best, greater, v);
      place = _mm512_mask_mov_epi32(place, greater, _mm512_set1_epi32(static_cast<int32_t>(k)));
    }
    if (w.relu) best = _mm512_max_ps(best, _mm512_setzero_ps());  // NaN and -0 give the second operand, +0
    store16(dst + out, best);
    if (argmax) _mm_storeu_si128(reinterpret_cast<__m128i*>(argmax + out), _mm512_cvtepi32_epi8(place));
  });
}

// The gradient moves as bits: where a window's argmax is (and, with `passes`, the relu let it through), diff_dst's
// 16 values; elsewhere zero.
inline void scatter16(const float* dy, const uint8_t* places, int64_t k, __mmask16 passes, float* at) {
  const __m512i place = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(places)));
  const __mmask16 here = _mm512_mask_cmpeq_epi32_mask(passes, place, _mm512_set1_epi32(static_cast<int32_t>(k)));
  _mm512_storeu_ps(at, _mm512_maskz_mov_ps(here, _mm512_loadu_ps(dy)));
}
inline void scatter16(const uint16_t* dy, const uint8_t* places, int64_t k, __mmask16 passes, uint16_t* at) {
  const __m256i place = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(places)));
  const __mmask16 here = _mm256_mask_cmpeq_epi16_mask(passes, place, _mm256_set1_epi16(static_cast<int16_t>(k)));
  const __m256i d = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(dy));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(at), _mm256_maskz_mov_epi16(here, d));
}

template <class T>
inline void backward(const PoolLoops& p, const T* dst, const T* diff_dst, const uint8_t* argmax, T* diff_src) {
  const PoolLoops w = p;
  const int64_t rows = w.rows, columns = w.columns;
  const int64_t covered_rows = w.out_rows * w.stride_rows, covered_columns = w.out_columns * w.stride_columns;
  const bool tiled = w.stride_rows == w.kernel_rows && w.stride_columns == w.kernel_columns &&
                     covered_rows == rows && covered_columns == columns;
  // The positions no window covers. The phases are position % stride, counted: a division per position was
  // nearly half of this loop's time on the CNN's 11 x 11 map.
  auto next = [](int64_t phase, int64_t stride) { return phase + 1 == stride ? 0 : phase + 1; };
  if (!tiled)
    for (int64_t n = 0; n < w.examples; ++n)
      for (int64_t g = 0; g < w.groups; ++g)
        for (int64_t h = 0, row_phase = 0; h < rows; ++h, row_phase = next(row_phase, w.stride_rows)) {
          T* row = diff_src + n * w.in_example + g * w.in_group + h * columns * w.in_position;
          const bool open_row = h >= covered_rows || row_phase >= w.kernel_rows;
          for (int64_t c = 0, phase = 0; c < columns; ++c, phase = next(phase, w.stride_columns))
            if (open_row || c >= covered_columns || phase >= w.kernel_columns)
              std::memset(row + c * w.in_position, 0, 16 * sizeof(T));
        }
  int64_t offsets[255];
  const int taps = window_offsets(w, offsets);
  each_window(w, [&](int64_t corner, int64_t out) [[gnu::always_inline]] {
    // The relu's backward: y > 0 is false for NaN, +0 and what is negative.
    const __mmask16 passes = w.relu ? _mm512_cmp_ps_mask(load16(dst + out), _mm512_setzero_ps(), _CMP_GT_OQ) : 0xFFFF;
    for (int k = 0; k < taps; ++k)
      scatter16(diff_dst + out, argmax + out, k, passes, diff_src + corner + offsets[k]);
  });
}

void forward_f32(const PoolLoops& p, const void* s, void* d, uint8_t* a) {
  forward(p, static_cast<const float*>(s), static_cast<float*>(d), a);
}
void forward_bf16(const PoolLoops& p, const void* s, void* d, uint8_t* a) {
  forward(p, static_cast<const uint16_t*>(s), static_cast<uint16_t*>(d), a);
}
void backward_f32(const PoolLoops& p, const void* d, const void* dd, const uint8_t* a, void* ds) {
  backward(p, static_cast<const float*>(d), static_cast<const float*>(dd), a, static_cast<float*>(ds));
}
void backward_bf16(const PoolLoops& p, const void* d, const void* dd, const uint8_t* a, void* ds) {
  backward(p, static_cast<const uint16_t*>(d), static_cast<const uint16_t*>(dd), a, static_cast<uint16_t*>(ds));
}

#pragma GCC diagnostic pop
#pragma GCC pop_options

// A [N, C, H, W] layout's strides in runs of 16 channels: {example, group, position}; nothing for other layouts.
// Positions follow each other row after row, and each example's values lie together, after the one before.
std::optional<std::array<int64_t, 3>> run_strides(const md& desc) {
  const dnnl_memory_desc_t& d = desc.data;
  if (d.ndims != 4 || d.format_kind != dnnl_blocked || d.offset0 != 0) return std::nullopt;
  const dnnl_blocking_desc_t& b = d.format_desc.blocking;
  const int64_t C = d.dims[1], H = d.dims[2], W = d.dims[3], groups = (C + 15) / 16;
  int64_t group, position;
  if (b.inner_nblks == 1 && b.inner_idxs[0] == 1 && b.inner_blks[0] == 16) {  // nChw16c
    group = b.strides[1];
    position = 16;
    if (group != H * W * 16) return std::nullopt;
  } else if (b.inner_nblks == 0 && b.strides[1] == 1 && C % 16 == 0) {  // nhwc
    group = 16;
    position = C;
  } else {
    return std::nullopt;
  }
  if (b.strides[3] != position || b.strides[2] != W * position || b.strides[0] != groups * 16 * H * W)
    return std::nullopt;
  return std::array<int64_t, 3>{b.strides[0], group, position};
}

}  // namespace

std::optional<PoolLoops> max_pool_loops(const md& src, const md& dst, const dnnl::memory::dims& kernel,
                                        const dnnl::memory::dims& strides, const dnnl::memory::dims& pad_l,
                                        const dnnl::memory::dims& pad_r) {
  static const bool allowed = avx512_allowed();
  const dt type = src.data_type();
  if (!allowed || (type != dt::f32 && type != dt::bf16) || dst.data_type() != type) return std::nullopt;
  if (kernel.size() != 2 || strides.size() != 2) return std::nullopt;
  for (const int64_t pad : pad_l)
    if (pad != 0) return std::nullopt;
  for (const int64_t pad : pad_r)
    if (pad != 0) return std::nullopt;
  if (strides[0] < kernel[0] || strides[1] < kernel[1] || kernel[0] < 1 || kernel[1] < 1 ||
      kernel[0] * kernel[1] > 255)
    return std::nullopt;
  const auto in = run_strides(src), out = run_strides(dst);
  if (!in || !out) return std::nullopt;
  const dnnl::memory::dims s = src.dims(), d = dst.dims();
  if (s[0] != d[0] || s[1] != d[1] || d[2] != (s[2] - kernel[0]) / strides[0] + 1 ||
      d[3] != (s[3] - kernel[1]) / strides[1] + 1 || s[2] < kernel[0] || s[3] < kernel[1])
    return std::nullopt;
  PoolLoops p;
  p.type = type;
  p.examples = s[0];
  p.groups = (s[1] + 15) / 16;
  p.rows = s[2];
  p.columns = s[3];
  p.out_rows = d[2];
  p.out_columns = d[3];
  p.kernel_rows = kernel[0];
  p.kernel_columns = kernel[1];
  p.stride_rows = strides[0];
  p.stride_columns = strides[1];
  p.in_example = (*in)[0];
  p.in_group = (*in)[1];
  p.in_position = (*in)[2];
  p.out_example = (*out)[0];
  p.out_group = (*out)[1];
  p.out_position = (*out)[2];
  return p;
}

void max_pool_forward(const PoolLoops& p, const void* src, void* dst, uint8_t* argmax) {
  if (p.type == dt::bf16) return forward_bf16(p, src, dst, argmax);
  forward_f32(p, src, dst, argmax);
}

void max_pool_backward(const PoolLoops& p, const void* dst, const void* diff_dst, const uint8_t* argmax,
                       void* diff_src) {
  if (p.type == dt::bf16) return backward_bf16(p, dst, diff_dst, argmax, diff_src);
  backward_f32(p, dst, diff_dst, argmax, diff_src);
}

}  // namespace onednn
