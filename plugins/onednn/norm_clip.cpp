#include "norm_clip.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

// The loops over one run of 16 channels are built twice, for AVX2 and for the x86-64 baseline (SSE2), and chosen
// when first called: the plugin is built for any x86-64, and the loops are bound by memory only once they move
// whole vectors. Each loop is written once, over vectors of W floats (a run is 16 / W of them), with the
// comparisons' masks as integer vectors: GCC splits a vector wider than the target's into scalar compares.
// The vectors never cross a real call (their helpers are always inlined into one instruction set's loops), so
// GCC's note that passing one would change with the target's ABI does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace onednn {
namespace {

template <int W>
struct Lanes {
  typedef float F __attribute__((vector_size(W * sizeof(float))));
  typedef int32_t I __attribute__((vector_size(W * sizeof(float))));
  static constexpr int kPerRun = 16 / W;
};

template <class F>
[[gnu::always_inline]] inline F load(const float* p) {
  F v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class F>
[[gnu::always_inline]] inline void store(float* p, F v) {
  std::memcpy(p, &v, sizeof v);
}
template <class F>
[[gnu::always_inline]] inline F splat(float f) {
  return F{} + f;
}
// Calls body(at, k) for every vector of one example's run: vector k (of 16 / W) of each position, at floats
// from the run's start.
template <int W, class Body>
[[gnu::always_inline]] inline void each_vector(int64_t positions, int64_t stride, Body&& body) {
  for (int64_t p = 0; p < positions; ++p)
#pragma GCC unroll 4
    for (int k = 0; k < Lanes<W>::kPerRun; ++k) body(p * stride + k * W, k);
}

// dy where the unclamped value scale * x + shift lay inside (lo, hi), else 0: what passes back through the clip.
template <int W>
[[gnu::always_inline]] inline typename Lanes<W>::F passed_gradient(typename Lanes<W>::F x, typename Lanes<W>::F dy,
                                                                   const float* scale, const float* shift,
                                                                   typename Lanes<W>::F lo, typename Lanes<W>::F hi) {
  using F = typename Lanes<W>::F;
  using I = typename Lanes<W>::I;
  const F z = x * load<F>(scale) + load<F>(shift);
  return reinterpret_cast<F>(reinterpret_cast<I>(dy) & ((z > lo) & (z < hi)));
}

// Sums of (x - shift) and of its square over one example's positions.
template <int W>
[[gnu::always_inline]] inline void moments(const float* x, int64_t positions, int64_t stride, const float* shift16,
                                           float* sums16, float* squares16) {
  using F = typename Lanes<W>::F;
  constexpr int K = Lanes<W>::kPerRun;
  F shift[K], s1[K], s2[K];
#pragma GCC unroll 4
  for (int k = 0; k < K; ++k) {
    shift[k] = load<F>(shift16 + k * W);
    s1[k] = s2[k] = F{};
  }
  each_vector<W>(positions, stride, [&](int64_t at, int k) [[gnu::always_inline]] {
    const F d = load<F>(x + at) - shift[k];
    s1[k] += d;
    s2[k] += d * d;
  });
#pragma GCC unroll 4
  for (int k = 0; k < K; ++k) {
    store(sums16 + k * W, s1[k]);
    store(squares16 + k * W, s2[k]);
  }
}

template <int W>
[[gnu::always_inline]] inline void scale_shift_clip(const float* x, float* y, int64_t positions, int64_t stride,
                                                    const float* scale16, const float* shift16, float lo, float hi) {
  using F = typename Lanes<W>::F;
  const F l = splat<F>(lo), h = splat<F>(hi);
  each_vector<W>(positions, stride, [&](int64_t at, int k) [[gnu::always_inline]] {
    F v = load<F>(x + at) * load<F>(scale16 + k * W) + load<F>(shift16 + k * W);
    v = v < l ? l : v;  // a NaN fails both tests and stays NaN
    v = v > h ? h : v;
    store(y + at, v);
  });
}

// Sums of the passed gradient g (dy where the unclamped value lay inside the bounds) and of g * (x - mean).
template <int W>
[[gnu::always_inline]] inline void clip_grad_sums(const float* x, const float* dy, int64_t positions, int64_t stride,
                                                  const float* scale16, const float* shift16, const float* mean16,
                                                  float lo, float hi, float* sums16, float* centred16) {
  using F = typename Lanes<W>::F;
  constexpr int K = Lanes<W>::kPerRun;
  const F l = splat<F>(lo), h = splat<F>(hi);
  F s1[K], s2[K];
#pragma GCC unroll 4
  for (int k = 0; k < K; ++k) s1[k] = s2[k] = F{};
  each_vector<W>(positions, stride, [&](int64_t at, int k) [[gnu::always_inline]] {
    const F xv = load<F>(x + at);
    const F g = passed_gradient<W>(xv, load<F>(dy + at), scale16 + k * W, shift16 + k * W, l, h);
    s1[k] += g;
    s2[k] += g * (xv - load<F>(mean16 + k * W));
  });
#pragma GCC unroll 4
  for (int k = 0; k < K; ++k) {
    store(sums16 + k * W, s1[k]);
    store(centred16 + k * W, s2[k]);
  }
}

// dx = a * g + b * (x - mean) + c, the batch-norm backward with the passed gradient g.
template <int W>
[[gnu::always_inline]] inline void clip_backward(const float* x, const float* dy, float* dx, int64_t positions,
                                                 int64_t stride, const float* scale16, const float* shift16,
                                                 const float* mean16, const float* a16, const float* b16,
                                                 const float* c16, float lo, float hi) {
  using F = typename Lanes<W>::F;
  const F l = splat<F>(lo), h = splat<F>(hi);
  each_vector<W>(positions, stride, [&](int64_t at, int k) [[gnu::always_inline]] {
    const F xv = load<F>(x + at);
    const F g = passed_gradient<W>(xv, load<F>(dy + at), scale16 + k * W, shift16 + k * W, l, h);
    store(dx + at, load<F>(a16 + k * W) * g + load<F>(b16 + k * W) * (xv - load<F>(mean16 + k * W)) +
                       load<F>(c16 + k * W));
  });
}

// One instance of each loop per instruction set, and the table of the ones this CPU runs.
struct RunKernels {
  decltype(&moments<4>) moments;
  decltype(&scale_shift_clip<4>) scale_shift_clip;
  decltype(&clip_grad_sums<4>) clip_grad_sums;
  decltype(&clip_backward<4>) clip_backward;
};

#define RAMJET_RUN_KERNELS(suffix, attributes, W)                                                               \
  attributes void moments_##suffix(const float* x, int64_t n, int64_t s, const float* sh, float* o1, float* o2) { \
    moments<W>(x, n, s, sh, o1, o2);                                                                          \
  }                                                                                                           \
  attributes void scale_shift_clip_##suffix(const float* x, float* y, int64_t n, int64_t s, const float* a,      \
                                            const float* b, float lo, float hi) {                             \
    scale_shift_clip<W>(x, y, n, s, a, b, lo, hi);                                                            \
  }                                                                                                           \
  attributes void clip_grad_sums_##suffix(const float* x, const float* dy, int64_t n, int64_t s, const float* a, \
                                          const float* b, const float* m, float lo, float hi, float* o1,      \
                                          float* o2) {                                                        \
    clip_grad_sums<W>(x, dy, n, s, a, b, m, lo, hi, o1, o2);                                                  \
  }                                                                                                           \
  attributes void clip_backward_##suffix(const float* x, const float* dy, float* dx, int64_t n, int64_t s,       \
                                         const float* a, const float* b, const float* m, const float* c1,     \
                                         const float* c2, const float* c3, float lo, float hi) {              \
    clip_backward<W>(x, dy, dx, n, s, a, b, m, c1, c2, c3, lo, hi);                                           \
  }
RAMJET_RUN_KERNELS(avx2, __attribute__((target("avx2,fma"))), 8)
RAMJET_RUN_KERNELS(baseline, , 4)
#undef RAMJET_RUN_KERNELS

const RunKernels& run_kernels() {
  static const RunKernels chosen =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")
          ? RunKernels{moments_avx2, scale_shift_clip_avx2, clip_grad_sums_avx2, clip_backward_avx2}
          : RunKernels{moments_baseline, scale_shift_clip_baseline, clip_grad_sums_baseline, clip_backward_baseline};
  return chosen;
}

constexpr int64_t kLanes = 16;
constexpr int64_t kParallelMin = 1 << 15;  // values below which one thread is faster than waking a team

// Per-channel values copied into whole groups of 16, padding lanes 0.
std::vector<float> padded(const float* per_channel, const ChannelRuns& runs) {
  std::vector<float> out(static_cast<size_t>(runs.groups() * kLanes), 0.0f);
  std::copy(per_channel, per_channel + runs.channels, out.begin());
  return out;
}

int64_t run_offset(const ChannelRuns& r, int64_t group, int64_t example) {
  return example * r.example_stride + group * r.group_stride;
}

bool parallel(const ChannelRuns& r) { return r.groups() * kLanes * r.count() >= kParallelMin; }

// Calls run(group, example) for every run, split evenly over the threads, in the order the runs lie in memory or
// in its reverse. Two passes over a tensor larger than the cache go one way and then the other, so that the second
// starts where the first ended, on what the cache still holds (and the first pass starts at the end its producer
// wrote last).
template <class Run>
void for_each_run(const ChannelRuns& r, bool reverse, Run run) {
  const int64_t groups = r.groups(), total = groups * r.examples;
#pragma omp parallel for schedule(static) if (parallel(r))
  for (int64_t i = 0; i < total; ++i) {
    const int64_t j = reverse ? total - 1 - i : i;
    run(j % groups, j / groups);
  }
}

// Two sums per lane for every run (its example's part of a channel's total), written by the threads in any order
// and added across examples in example order.
class RunSums {
 public:
  explicit RunSums(const ChannelRuns& r)
      : examples_(r.examples), part_(static_cast<size_t>(r.groups() * r.examples * 2 * kLanes)) {}
  // Where the run (group, example) writes its kLanes first sums, followed by its kLanes second sums.
  float* at(int64_t group, int64_t example) {
    return &part_[static_cast<size_t>((group * examples_ + example) * 2 * kLanes)];
  }
  // The group's totals per lane, in double.
  void total(int64_t group, double* first, double* second) {
    std::fill(first, first + kLanes, 0.0);
    std::fill(second, second + kLanes, 0.0);
    for (int64_t n = 0; n < examples_; ++n) {
      const float* in = at(group, n);
      for (int64_t j = 0; j < kLanes; ++j) {
        first[j] += in[j];
        second[j] += in[kLanes + j];
      }
    }
  }

 private:
  int64_t examples_;
  std::vector<float> part_;
};

}  // namespace

std::optional<ChannelRuns> channel_runs(const md& desc) {
  const dnnl_memory_desc_t& d = desc.data;
  if (d.data_type != dnnl_f32 || d.format_kind != dnnl_blocked || d.offset0 != 0) return std::nullopt;
  if (d.ndims != 2 && d.ndims != 4) return std::nullopt;
  const dnnl_blocking_desc_t& b = d.format_desc.blocking;
  ChannelRuns r;
  r.examples = d.dims[0];
  r.channels = d.dims[1];
  r.positions = d.ndims == 4 ? d.dims[2] * d.dims[3] : 1;
  r.example_stride = b.strides[0];
  if (b.inner_nblks == 1 && b.inner_blks[0] == kLanes && b.inner_idxs[0] == 1) {  // nChw16c, nC16c
    r.group_stride = b.strides[1];
    r.position_stride = kLanes;
  } else if (b.inner_nblks == 0 && b.strides[1] == 1 && r.channels % kLanes == 0) {  // nhwc, nc
    r.group_stride = kLanes;
    r.position_stride = r.channels;
  } else {
    return std::nullopt;
  }
  // Positions must follow each other, row after row.
  if (d.ndims == 4 && (b.strides[3] != r.position_stride || b.strides[2] != d.dims[3] * r.position_stride))
    return std::nullopt;
  return r;
}

md channel_blocked(const md& desc) {
  const dnnl::memory::dims dims = desc.dims();
  if (dims.size() == 4) return md(dims, dt::f32, tag::aBcd16b);
  // oneDNN 2.6's C++ API names no [N, C] layout blocked by 16: [N, C, 1] blocked, without its unit dim.
  return md({dims[0], dims[1], 1}, dt::f32, tag::aBc16b).reshape(dims);
}

void fold_norm(const NormInputs& norm, int64_t channels, float* scale, float* shift) {
  for (int64_t c = 0; c < channels; ++c) {
    const double inv_std = 1.0 / std::sqrt(static_cast<double>(norm.variance[c]) + norm.epsilon);
    const double s = norm.gamma[c] * inv_std;
    scale[c] = static_cast<float>(s);
    shift[c] = static_cast<float>(norm.beta[c] - norm.mean[c] * s);
  }
}

void channel_moments(const float* x, const ChannelRuns& r, float* mean, float* variance) {
  RunSums part(r);
  for_each_run(r, /*reverse=*/true, [&](int64_t g, int64_t n) {
    float* out = part.at(g, n);
    run_kernels().moments(x + run_offset(r, g, n), r.positions, r.position_stride, x + run_offset(r, g, 0), out,
                          out + kLanes);
  });
  const double count = static_cast<double>(r.count());
  for (int64_t g = 0; g < r.groups(); ++g) {
    double sums[kLanes], squares[kLanes];
    part.total(g, sums, squares);
    const float* shift = x + run_offset(r, g, 0);
    for (int64_t j = 0; j < kLanes && g * kLanes + j < r.channels; ++j) {
      const double m = sums[j] / count;
      mean[g * kLanes + j] = static_cast<float>(shift[j] + m);
      variance[g * kLanes + j] = static_cast<float>(std::max(0.0, squares[j] / count - m * m));
    }
  }
}

void scale_shift_clip(const float* x, const ChannelRuns& r, const float* scale, const float* shift, ClipBounds clip,
                      float* y) {
  const std::vector<float> s = padded(scale, r), t = padded(shift, r);
  for_each_run(r, /*reverse=*/false, [&](int64_t g, int64_t n) {
    const int64_t at = run_offset(r, g, n);
    run_kernels().scale_shift_clip(x + at, y + at, r.positions, r.position_stride, &s[g * kLanes], &t[g * kLanes],
                                   clip.lo, clip.hi);
  });
}

void norm_clip_backward(const float* x, const float* dy, const ChannelRuns& r, const NormInputs& norm,
                        ClipBounds clip, float* dx, float* dgamma, float* dbeta) {
  const int64_t groups = r.groups(), C = r.channels;
  std::vector<float> scale(C), shift(C);
  fold_norm(norm, C, scale.data(), shift.data());
  const std::vector<float> s = padded(scale.data(), r), t = padded(shift.data(), r), m = padded(norm.mean, r);
  RunSums part(r);
  for_each_run(r, /*reverse=*/true, [&](int64_t g, int64_t n) {
    const int64_t at = run_offset(r, g, n);
    float* out = part.at(g, n);
    run_kernels().clip_grad_sums(x + at, dy + at, r.positions, r.position_stride, &s[g * kLanes], &t[g * kLanes],
                                 &m[g * kLanes], clip.lo, clip.hi, out, out + kLanes);
  });
  // Per channel: d beta = sum g; d gamma = sum g * x̂ = inv_std * sum g (x - mean); and the coefficients of
  // dx = gamma inv_std (g - d beta / M - x̂ d gamma / M).
  std::vector<float> a(groups * kLanes, 0.0f), b(groups * kLanes, 0.0f), c(groups * kLanes, 0.0f);
  const double count = static_cast<double>(r.count());
  for (int64_t g = 0; g < groups; ++g) {
    double sums[kLanes], centred[kLanes];
    part.total(g, sums, centred);
    for (int64_t j = 0; j < kLanes && g * kLanes + j < C; ++j) {
      const int64_t ch = g * kLanes + j;
      const double inv_std = 1.0 / std::sqrt(static_cast<double>(norm.variance[ch]) + norm.epsilon);
      const double gamma_inv_std = norm.gamma[ch] * inv_std;
      dbeta[ch] = static_cast<float>(sums[j]);
      dgamma[ch] = static_cast<float>(centred[j] * inv_std);
      a[ch] = static_cast<float>(gamma_inv_std);
      b[ch] = static_cast<float>(-gamma_inv_std * inv_std * inv_std * centred[j] / count);
      c[ch] = static_cast<float>(-gamma_inv_std * sums[j] / count);
    }
  }
  if (!dx) return;
  for_each_run(r, /*reverse=*/false, [&](int64_t g, int64_t n) {
    const int64_t at = run_offset(r, g, n), k = g * kLanes;
    run_kernels().clip_backward(x + at, dy + at, dx + at, r.positions, r.position_stride, &s[k], &t[k], &m[k], &a[k],
                                &b[k], &c[k], clip.lo, clip.hi);
  });
}

}  // namespace onednn
