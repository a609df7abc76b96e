#include "norm_clip.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

// The loops over one run of R channels (R = 16 or 8) are built for AVX2 and for the x86-64 baseline (SSE2), and
// chosen when first called: the plugin is built for any x86-64, and the loops are bound by memory only once they
// move whole vectors. Each loop is written once, over vectors of W floats (a run is R / W of them), with the
// comparisons' masks as integer vectors: GCC splits a vector wider than the target's into scalar compares.
// The vectors never cross a real call (their helpers are always inlined into one instruction set's loops), so
// GCC's note that passing one would change with the target's ABI does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace onednn {
namespace {

template <int W>
struct Vec {
  typedef float F __attribute__((vector_size(W * sizeof(float))));
  typedef int32_t I __attribute__((vector_size(W * sizeof(float))));
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

// Calls body(at, k) for every vector of one example's run of R channels: vector k (of R / W) of each position, at
// floats from the run's start.
template <int W, int R, class Body>
[[gnu::always_inline]] inline void each_vector(int64_t positions, int64_t stride, Body&& body) {
  for (int64_t p = 0; p < positions; ++p)
#pragma GCC unroll 4
    for (int k = 0; k < R / W; ++k) body(p * stride + k * W, k);
}

// One run's per-channel constants, R floats each.
struct RunNorm {
  const float* mean;
  const float* scale;  // gamma / sqrt(variance + epsilon)
  const float* beta;
};

// The unclamped value (x - mean) * scale + beta of vector k, and dy where it lay inside (lo, hi), else 0: what
// passes back through the clip.
template <int W>
[[gnu::always_inline]] inline typename Vec<W>::F passed_gradient(typename Vec<W>::F centred, typename Vec<W>::F dy,
                                                                 const RunNorm& n, int k, typename Vec<W>::F lo,
                                                                 typename Vec<W>::F hi) {
  using F = typename Vec<W>::F;
  using I = typename Vec<W>::I;
  const F z = centred * load<F>(n.scale + k * W) + load<F>(n.beta + k * W);
  return reinterpret_cast<F>(reinterpret_cast<I>(dy) & ((z > lo) & (z < hi)));
}

// Two sums over one example's run, terms(at, k) giving vector k's two terms at each position; stored as R floats
// each.
template <int W, int R, class Terms>
[[gnu::always_inline]] inline void run_sums(int64_t positions, int64_t stride, float* first_r, float* second_r,
                                            Terms&& terms) {
  using F = typename Vec<W>::F;
  constexpr int K = R / W;
  F s1[K], s2[K];
#pragma GCC unroll 4
  for (int k = 0; k < K; ++k) s1[k] = s2[k] = F{};
  each_vector<W, R>(positions, stride, [&](int64_t at, int k) [[gnu::always_inline]] {
    const auto [first, second] = terms(at, k);
    s1[k] += first;
    s2[k] += second;
  });
#pragma GCC unroll 4
  for (int k = 0; k < K; ++k) {
    store(first_r + k * W, s1[k]);
    store(second_r + k * W, s2[k]);
  }
}

// Sums of (x - shift) and of its square over one example's positions.
template <int W, int R>
[[gnu::always_inline]] inline void moments(const float* x, int64_t positions, int64_t stride, const float* shift_r,
                                           float* sums_r, float* squares_r) {
  using F = typename Vec<W>::F;
  run_sums<W, R>(positions, stride, sums_r, squares_r, [&](int64_t at, int k) [[gnu::always_inline]] {
    const F d = load<F>(x + at) - load<F>(shift_r + k * W);
    return std::pair{d, d * d};
  });
}

template <int W, int R>
[[gnu::always_inline]] inline void normalize_clip(const float* x, float* y, int64_t positions, int64_t stride,
                                                  const RunNorm& n, float lo, float hi) {
  using F = typename Vec<W>::F;
  const F l = splat<F>(lo), h = splat<F>(hi);
  each_vector<W, R>(positions, stride, [&](int64_t at, int k) [[gnu::always_inline]] {
    F v = (load<F>(x + at) - load<F>(n.mean + k * W)) * load<F>(n.scale + k * W) + load<F>(n.beta + k * W);
    v = v < l ? l : v;  // a NaN fails both tests and stays NaN
    v = v > h ? h : v;
    store(y + at, v);
  });
}

// Sums of the passed gradient g and of g * (x - mean).
template <int W, int R>
[[gnu::always_inline]] inline void clip_grad_sums(const float* x, const float* dy, int64_t positions, int64_t stride,
                                                  const RunNorm& n, float lo, float hi, float* sums_r,
                                                  float* centred_r) {
  using F = typename Vec<W>::F;
  const F l = splat<F>(lo), h = splat<F>(hi);
  run_sums<W, R>(positions, stride, sums_r, centred_r, [&](int64_t at, int k) [[gnu::always_inline]] {
    const F centred = load<F>(x + at) - load<F>(n.mean + k * W);
    const F g = passed_gradient<W>(centred, load<F>(dy + at), n, k, l, h);
    return std::pair{g, g * centred};
  });
}

// dx = a * g + b * (x - mean) + c, the batch-norm backward with the passed gradient g.
template <int W, int R>
[[gnu::always_inline]] inline void clip_backward(const float* x, const float* dy, float* dx, int64_t positions,
                                                 int64_t stride, const RunNorm& n, const float* a_r,
                                                 const float* b_r, const float* c_r, float lo, float hi) {
  using F = typename Vec<W>::F;
  const F l = splat<F>(lo), h = splat<F>(hi);
  each_vector<W, R>(positions, stride, [&](int64_t at, int k) [[gnu::always_inline]] {
    const F centred = load<F>(x + at) - load<F>(n.mean + k * W);
    const F g = passed_gradient<W>(centred, load<F>(dy + at), n, k, l, h);
    store(dx + at, load<F>(a_r + k * W) * g + load<F>(b_r + k * W) * centred + load<F>(c_r + k * W));
  });
}

// One instance of each loop per instruction set and run width, and the table of those this CPU runs.
struct RunKernels {
  decltype(&moments<4, 16>) moments;
  decltype(&normalize_clip<4, 16>) normalize_clip;
  decltype(&clip_grad_sums<4, 16>) clip_grad_sums;
  decltype(&clip_backward<4, 16>) clip_backward;
};

#define RAMJET_RUN_KERNELS(suffix, attributes, W, R)                                                             \
  attributes void moments_##suffix(const float* x, int64_t n, int64_t s, const float* sh, float* o1, float* o2) { \
    moments<W, R>(x, n, s, sh, o1, o2);                                                                       \
  }                                                                                                           \
  attributes void normalize_clip_##suffix(const float* x, float* y, int64_t n, int64_t s, const RunNorm& m,     \
                                          float lo, float hi) {                                               \
    normalize_clip<W, R>(x, y, n, s, m, lo, hi);                                                              \
  }                                                                                                           \
  attributes void clip_grad_sums_##suffix(const float* x, const float* dy, int64_t n, int64_t s,               \
                                          const RunNorm& m, float lo, float hi, float* o1, float* o2) {       \
    clip_grad_sums<W, R>(x, dy, n, s, m, lo, hi, o1, o2);                                                     \
  }                                                                                                           \
  attributes void clip_backward_##suffix(const float* x, const float* dy, float* dx, int64_t n, int64_t s,       \
                                         const RunNorm& m, const float* a, const float* b, const float* c,    \
                                         float lo, float hi) {                                                \
    clip_backward<W, R>(x, dy, dx, n, s, m, a, b, c, lo, hi);                                                 \
  }                                                                                                           \
  constexpr RunKernels kernels_##suffix{moments_##suffix, normalize_clip_##suffix, clip_grad_sums_##suffix,    \
                                        clip_backward_##suffix};
RAMJET_RUN_KERNELS(avx2_16, __attribute__((target("avx2,fma"))), 8, 16)
RAMJET_RUN_KERNELS(avx2_8, __attribute__((target("avx2,fma"))), 8, 8)
RAMJET_RUN_KERNELS(baseline_16, , 4, 16)
RAMJET_RUN_KERNELS(baseline_8, , 4, 8)
#undef RAMJET_RUN_KERNELS

// AVX2 where the CPU has it and oneDNN may use it: ONEDNN_MAX_CPU_ISA caps these loops as it caps oneDNN's (and
// lets a test run the baseline ones on any machine).
bool use_avx2() {
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && isa != dnnl::cpu_isa::sse41 &&
         isa != dnnl::cpu_isa::avx;
}

const RunKernels& run_kernels(const ChannelRuns& r) {
  static const bool avx2 = use_avx2();
  if (r.lanes == 8) return avx2 ? kernels_avx2_8 : kernels_baseline_8;
  return avx2 ? kernels_avx2_16 : kernels_baseline_16;
}

constexpr int64_t kParallelMin = 1 << 15;  // values below which one thread is faster than waking a team

// Per-channel values copied into whole groups, padding lanes 0.
std::vector<float> padded(const float* per_channel, const ChannelRuns& r) {
  std::vector<float> out(static_cast<size_t>(r.groups() * r.lanes), 0.0f);
  std::copy(per_channel, per_channel + r.channels, out.begin());
  return out;
}

// gamma / sqrt(variance + epsilon) per channel.
std::vector<float> norm_scale(const NormInputs& norm, int64_t channels) {
  std::vector<float> scale(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c)
    scale[c] = static_cast<float>(norm.gamma[c] / std::sqrt(static_cast<double>(norm.variance[c]) + norm.epsilon));
  return scale;
}

// The per-channel constants of a call, padded to whole groups.
struct PaddedNorm {
  std::vector<float> mean, scale, beta;
  PaddedNorm(const NormInputs& norm, const ChannelRuns& r)
      : mean(padded(norm.mean, r)), scale(padded(norm_scale(norm, r.channels).data(), r)),
        beta(padded(norm.beta, r)) {}
  RunNorm of_group(int64_t g, int64_t lanes) const {
    return {&mean[g * lanes], &scale[g * lanes], &beta[g * lanes]};
  }
};

int64_t run_offset(const ChannelRuns& r, int64_t group, int64_t example) {
  return example * r.example_stride + group * r.group_stride;
}

bool parallel(const ChannelRuns& r) { return r.groups() * r.lanes * r.count() >= kParallelMin; }

// Runs a thread takes at a time: at least a few thousand values, so the handout costs nothing beside them.
constexpr int kRunsPerHandout = 4;

// Calls run(group, example) for every run, a few runs at a time to whichever thread is free (a thread sharing its
// CPU with another process takes fewer), in the order the runs lie in memory or in its reverse. Two passes over a
// tensor larger than the cache go one way and then the other, so that the second starts where the first ended, on
// what the cache still holds (and the first pass starts at the end its producer wrote last).
template <class Run>
void for_each_run(const ChannelRuns& r, bool reverse, Run run) {
  const int64_t groups = r.groups(), total = groups * r.examples;
#pragma omp parallel for schedule(dynamic, kRunsPerHandout) if (parallel(r))
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
      : lanes_(r.lanes), examples_(r.examples), part_(static_cast<size_t>(r.groups() * r.examples * 2 * r.lanes)) {}
  // Where the run (group, example) writes its first sums, one per lane, followed by its second sums.
  float* at(int64_t group, int64_t example) {
    return &part_[static_cast<size_t>((group * examples_ + example) * 2 * lanes_)];
  }
  // The group's totals per lane, in double.
  void total(int64_t group, std::vector<double>& first, std::vector<double>& second) {
    first.assign(static_cast<size_t>(lanes_), 0.0);
    second.assign(static_cast<size_t>(lanes_), 0.0);
    for (int64_t n = 0; n < examples_; ++n) {
      const float* in = at(group, n);
      for (int64_t j = 0; j < lanes_; ++j) {
        first[j] += in[j];
        second[j] += in[lanes_ + j];
      }
    }
  }

 private:
  int64_t lanes_, examples_;
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
  const bool blocked = b.inner_nblks == 1 && b.inner_idxs[0] == 1 && (b.inner_blks[0] == 16 || b.inner_blks[0] == 8);
  if (blocked) {  // nChw16c, nChw8c, nC16c, nC8c
    r.lanes = b.inner_blks[0];
    r.group_stride = b.strides[1];
    r.position_stride = r.lanes;
  } else if (b.inner_nblks == 0 && b.strides[1] == 1 && r.channels % 8 == 0) {  // nhwc, nc
    r.lanes = r.channels % 16 == 0 ? 16 : 8;
    r.group_stride = r.lanes;
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

void channel_moments(const float* x, const ChannelRuns& r, float* mean, float* variance) {
  RunSums part(r);
  const RunKernels& kernels = run_kernels(r);
  for_each_run(r, /*reverse=*/true, [&](int64_t g, int64_t n) {
    float* out = part.at(g, n);
    kernels.moments(x + run_offset(r, g, n), r.positions, r.position_stride, x + run_offset(r, g, 0), out,
                    out + r.lanes);
  });
  const double count = static_cast<double>(r.count());
  std::vector<double> sums, squares;
  for (int64_t g = 0; g < r.groups(); ++g) {
    part.total(g, sums, squares);
    const float* shift = x + run_offset(r, g, 0);
    for (int64_t j = 0; j < r.lanes && g * r.lanes + j < r.channels; ++j) {
      const double m = sums[j] / count;
      mean[g * r.lanes + j] = static_cast<float>(shift[j] + m);
      variance[g * r.lanes + j] = static_cast<float>(std::max(0.0, squares[j] / count - m * m));
    }
  }
}

void normalize_clip(const float* x, const ChannelRuns& r, const NormInputs& norm, ClipBounds clip, float* y) {
  const PaddedNorm constants(norm, r);
  const RunKernels& kernels = run_kernels(r);
  for_each_run(r, /*reverse=*/false, [&](int64_t g, int64_t n) {
    const int64_t at = run_offset(r, g, n);
    kernels.normalize_clip(x + at, y + at, r.positions, r.position_stride, constants.of_group(g, r.lanes), clip.lo,
                           clip.hi);
  });
}

void norm_clip_backward(const float* x, const float* dy, const ChannelRuns& r, const NormInputs& norm,
                        ClipBounds clip, float* dx, float* dgamma, float* dbeta) {
  const int64_t groups = r.groups(), C = r.channels, lanes = r.lanes;
  const PaddedNorm constants(norm, r);
  const RunKernels& kernels = run_kernels(r);
  RunSums part(r);
  for_each_run(r, /*reverse=*/true, [&](int64_t g, int64_t n) {
    const int64_t at = run_offset(r, g, n);
    float* out = part.at(g, n);
    kernels.clip_grad_sums(x + at, dy + at, r.positions, r.position_stride, constants.of_group(g, lanes), clip.lo,
                           clip.hi, out, out + lanes);
  });
  // Per channel: d beta = sum g; d gamma = sum g * x̂ = inv_std * sum g (x - mean); and the coefficients of
  // dx = gamma inv_std (g - d beta / M - x̂ d gamma / M).
  std::vector<float> a(groups * lanes, 0.0f), b(groups * lanes, 0.0f), c(groups * lanes, 0.0f);
  const double count = static_cast<double>(r.count());
  std::vector<double> sums, centred;
  for (int64_t g = 0; g < groups; ++g) {
    part.total(g, sums, centred);
    for (int64_t j = 0; j < lanes && g * lanes + j < C; ++j) {
      const int64_t ch = g * lanes + j;
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
    const int64_t at = run_offset(r, g, n), k = g * lanes;
    kernels.clip_backward(x + at, dy + at, dx + at, r.positions, r.position_stride, constants.of_group(g, lanes),
                          &a[k], &b[k], &c[k], clip.lo, clip.hi);
  });
}

}  // namespace onednn
