#include "max_pool_loops.hpp"

#include <array>
#include <cstring>

// Each loop is written once over vectors of 16 lanes (one run of channels) with GCC's vector types. The vectors
// never cross a real call, so GCC's note that passing one would change with the target's ABI does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace onednn {
namespace {

typedef float F16 __attribute__((vector_size(64)));
typedef int32_t I16 __attribute__((vector_size(64)));
typedef uint32_t U16 __attribute__((vector_size(64)));
typedef uint16_t H16 __attribute__((vector_size(32)));
typedef uint8_t B16 __attribute__((vector_size(16)));

// A run of 16 values as float32: bf16 widened exactly (its bits are float32's upper half).
template <bool Bf16>
[[gnu::always_inline]] inline F16 load(const void* base, int64_t at) {
  if constexpr (Bf16) {
    H16 h;
    std::memcpy(&h, static_cast<const uint16_t*>(base) + at, sizeof h);
    return reinterpret_cast<F16>(__builtin_convertvector(h, U16) << 16);
  } else {
    F16 v;
    std::memcpy(&v, static_cast<const float*>(base) + at, sizeof v);
    return v;
  }
}

// Stores what load gave, or a value selected from such: for bf16 the upper half is the value itself, exactly.
template <bool Bf16>
[[gnu::always_inline]] inline void store(void* base, int64_t at, F16 v) {
  if constexpr (Bf16) {
    const H16 h = __builtin_convertvector(reinterpret_cast<U16>(v) >> 16, H16);
    std::memcpy(static_cast<uint16_t*>(base) + at, &h, sizeof h);
  } else {
    std::memcpy(static_cast<float*>(base) + at, &v, sizeof v);
  }
}

template <bool Bf16>
[[gnu::always_inline]] inline void forward(const PoolLoops& p, const void* src, void* dst, uint8_t* argmax) {
  const int64_t window_rows = p.kernel_rows, window_columns = p.kernel_columns;
  for (int64_t n = 0; n < p.examples; ++n)
    for (int64_t g = 0; g < p.groups; ++g) {
      const int64_t in0 = n * p.in_example + g * p.in_group, out0 = n * p.out_example + g * p.out_group;
      for (int64_t oh = 0; oh < p.out_rows; ++oh)
        for (int64_t ow = 0; ow < p.out_columns; ++ow) {
          const int64_t corner = in0 + (oh * p.stride_rows * p.columns + ow * p.stride_columns) * p.in_position;
          F16 best = load<Bf16>(src, corner);
          I16 place = I16{};
          for (int64_t kh = 0; kh < window_rows; ++kh)
            for (int64_t kw = kh == 0 ? 1 : 0; kw < window_columns; ++kw) {
              const F16 v = load<Bf16>(src, corner + (kh * p.columns + kw) * p.in_position);
              const I16 greater = v > best;  // a NaN is never greater: the first value's place stands
              best = greater ? v : best;
              place = greater ? I16{} + static_cast<int32_t>(kh * window_columns + kw) : place;
            }
          const int64_t out = out0 + (oh * p.out_columns + ow) * p.out_position;
          store<Bf16>(dst, out, best);
          if (!argmax) continue;
          const B16 bytes = __builtin_convertvector(place, B16);
          std::memcpy(argmax + out, &bytes, sizeof bytes);
        }
    }
}

template <bool Bf16>
[[gnu::always_inline]] inline void backward(const PoolLoops& p, const void* diff_dst, const uint8_t* argmax,
                                            void* diff_src) {
  const int64_t covered_rows = p.out_rows * p.stride_rows, covered_columns = p.out_columns * p.stride_columns;
  const bool tiled = p.stride_rows == p.kernel_rows && p.stride_columns == p.kernel_columns &&
                     covered_rows == p.rows && covered_columns == p.columns;
  for (int64_t n = 0; n < p.examples; ++n)
    for (int64_t g = 0; g < p.groups; ++g) {
      const int64_t in0 = n * p.in_example + g * p.in_group, out0 = n * p.out_example + g * p.out_group;
      if (!tiled)  // the positions no window covers
        for (int64_t h = 0; h < p.rows; ++h)
          for (int64_t w = 0; w < p.columns; ++w)
            if (h >= covered_rows || h % p.stride_rows >= p.kernel_rows || w >= covered_columns ||
                w % p.stride_columns >= p.kernel_columns)
              store<Bf16>(diff_src, in0 + (h * p.columns + w) * p.in_position, F16{});
      for (int64_t oh = 0; oh < p.out_rows; ++oh)
        for (int64_t ow = 0; ow < p.out_columns; ++ow) {
          const int64_t out = out0 + (oh * p.out_columns + ow) * p.out_position;
          const F16 dy = load<Bf16>(diff_dst, out);
          B16 bytes;
          std::memcpy(&bytes, argmax + out, sizeof bytes);
          const I16 place = __builtin_convertvector(bytes, I16);
          const int64_t corner = in0 + (oh * p.stride_rows * p.columns + ow * p.stride_columns) * p.in_position;
          for (int64_t kh = 0; kh < p.kernel_rows; ++kh)
            for (int64_t kw = 0; kw < p.kernel_columns; ++kw) {
              const I16 here = place == static_cast<int32_t>(kh * p.kernel_columns + kw);
              store<Bf16>(diff_src, corner + (kh * p.columns + kw) * p.in_position, here ? dy : F16{});
            }
        }
    }
}

// The loops are built for AVX-512 only: elsewhere oneDNN lays float32 channels out in runs of 8, which they do not
// read, and bf16 training needs AVX-512. `ONEDNN_MAX_CPU_ISA` below AVX-512 turns them off as it caps oneDNN.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) void forward_f32(const PoolLoops& p, const void* s,
                                                                              void* d, uint8_t* a) {
  forward<false>(p, s, d, a);
}
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) void forward_bf16(const PoolLoops& p, const void* s,
                                                                               void* d, uint8_t* a) {
  forward<true>(p, s, d, a);
}
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) void backward_f32(const PoolLoops& p, const void* dd,
                                                                               const uint8_t* a, void* ds) {
  backward<false>(p, dd, a, ds);
}
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) void backward_bf16(const PoolLoops& p,
                                                                                const void* dd, const uint8_t* a,
                                                                                void* ds) {
  backward<true>(p, dd, a, ds);
}

bool avx512_allowed() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto core = static_cast<unsigned>(dnnl_cpu_isa_avx512_core);
  return (isa & core) == core && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}

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

size_t PoolLoops::argmax_bytes() const { return static_cast<size_t>(examples * out_example); }

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

void max_pool_backward(const PoolLoops& p, const void* diff_dst, const uint8_t* argmax, void* diff_src) {
  if (p.type == dt::bf16) return backward_bf16(p, diff_dst, argmax, diff_src);
  backward_f32(p, diff_dst, argmax, diff_src);
}

}  // namespace onednn
