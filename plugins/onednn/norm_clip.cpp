#include "norm_clip.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

// Each loop over one run of 16 channels is built for AVX-512, AVX2 and the baseline, chosen when the plugin loads:
// the plugin is built for any x86-64, and these loops are bound by memory only once they move whole vectors.
#define RAMJET_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

// The 64-byte vectors below never cross a call boundary (their helpers are always inlined), so GCC's note that
// passing one changes with the target's ABI does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace onednn {
namespace norm_clip_runs {  // external linkage: GCC resolves target clones through an ifunc

using Floats16 = float __attribute__((vector_size(64)));

[[gnu::always_inline]] inline Floats16 load(const float* p) {
  Floats16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
[[gnu::always_inline]] inline void store(float* p, Floats16 v) { std::memcpy(p, &v, sizeof v); }
[[gnu::always_inline]] inline Floats16 splat(float f) { return Floats16{} + f; }

// Sums of (x - shift) and of its square over one example's positions.
RAMJET_VECTOR_CLONES void moments(const float* x, int64_t positions, int64_t stride, const float* shift16,
                                  float* sums16, float* squares16) {
  const Floats16 shift = load(shift16);
  Floats16 s1 = {}, s2 = {}, t1 = {}, t2 = {};  // two chains, so the adds overlap
  int64_t p = 0;
  for (; p + 1 < positions; p += 2) {
    const Floats16 a = load(x + p * stride) - shift;
    const Floats16 b = load(x + (p + 1) * stride) - shift;
    s1 += a;
    s2 += a * a;
    t1 += b;
    t2 += b * b;
  }
  if (p < positions) {
    const Floats16 a = load(x + p * stride) - shift;
    s1 += a;
    s2 += a * a;
  }
  store(sums16, s1 + t1);
  store(squares16, s2 + t2);
}

RAMJET_VECTOR_CLONES void scale_shift_clip(const float* x, float* y, int64_t positions, int64_t stride,
                                           const float* scale16, const float* shift16, float lo, float hi) {
  const Floats16 scale = load(scale16), shift = load(shift16), l = splat(lo), h = splat(hi);
  for (int64_t p = 0; p < positions; ++p) {
    Floats16 v = load(x + p * stride) * scale + shift;
    v = v < l ? l : v;  // a NaN fails both tests and stays NaN
    v = v > h ? h : v;
    store(y + p * stride, v);
  }
}

// Sums of the passed gradient g (dy where the unclamped value lay inside the bounds) and of g * (x - mean).
RAMJET_VECTOR_CLONES void clip_grad_sums(const float* x, const float* dy, int64_t positions, int64_t stride,
                                         const float* scale16, const float* shift16, const float* mean16, float lo,
                                         float hi, float* sums16, float* centred16) {
  const Floats16 scale = load(scale16), shift = load(shift16), mean = load(mean16), l = splat(lo), h = splat(hi);
  const Floats16 zero = {};
  Floats16 s1 = {}, s2 = {};
  for (int64_t p = 0; p < positions; ++p) {
    const Floats16 xv = load(x + p * stride);
    const Floats16 z = xv * scale + shift;
    const Floats16 g = (z > l) & (z < h) ? load(dy + p * stride) : zero;
    s1 += g;
    s2 += g * (xv - mean);
  }
  store(sums16, s1);
  store(centred16, s2);
}

// dx = a * g + b * (x - mean) + c, the batch-norm backward with the passed gradient g.
RAMJET_VECTOR_CLONES void clip_backward(const float* x, const float* dy, float* dx, int64_t positions,
                                        int64_t stride, const float* scale16, const float* shift16,
                                        const float* mean16, const float* a16, const float* b16, const float* c16,
                                        float lo, float hi) {
  const Floats16 scale = load(scale16), shift = load(shift16), mean = load(mean16), l = splat(lo), h = splat(hi);
  const Floats16 a = load(a16), b = load(b16), c = load(c16), zero = {};
  for (int64_t p = 0; p < positions; ++p) {
    const Floats16 xv = load(x + p * stride);
    const Floats16 z = xv * scale + shift;
    const Floats16 g = (z > l) & (z < h) ? load(dy + p * stride) : zero;
    store(dx + p * stride, a * g + b * (xv - mean) + c);
  }
}

}  // namespace norm_clip_runs

namespace {

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
  const int64_t groups = r.groups(), examples = r.examples;
  std::vector<float> part(static_cast<size_t>(groups * examples * 2 * kLanes));
#pragma omp parallel for collapse(2) schedule(static) if (parallel(r))
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t n = 0; n < examples; ++n) {
      float* out = &part[static_cast<size_t>((g * examples + n) * 2 * kLanes)];
      norm_clip_runs::moments(x + run_offset(r, g, n), r.positions, r.position_stride, x + run_offset(r, g, 0), out,
                              out + kLanes);
    }
  const double count = static_cast<double>(r.count());
  for (int64_t g = 0; g < groups; ++g) {
    double sums[kLanes] = {}, squares[kLanes] = {};
    for (int64_t n = 0; n < examples; ++n) {
      const float* in = &part[static_cast<size_t>((g * examples + n) * 2 * kLanes)];
      for (int64_t j = 0; j < kLanes; ++j) {
        sums[j] += in[j];
        squares[j] += in[kLanes + j];
      }
    }
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
  const int64_t groups = r.groups(), examples = r.examples;
#pragma omp parallel for collapse(2) schedule(static) if (parallel(r))
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t n = 0; n < examples; ++n) {
      const int64_t at = run_offset(r, g, n);
      norm_clip_runs::scale_shift_clip(x + at, y + at, r.positions, r.position_stride, &s[g * kLanes],
                                       &t[g * kLanes], clip.lo, clip.hi);
    }
}

void norm_clip_backward(const float* x, const float* dy, const ChannelRuns& r, const NormInputs& norm,
                        ClipBounds clip, float* dx, float* dgamma, float* dbeta) {
  const int64_t groups = r.groups(), examples = r.examples, C = r.channels;
  std::vector<float> scale(C), shift(C);
  fold_norm(norm, C, scale.data(), shift.data());
  const std::vector<float> s = padded(scale.data(), r), t = padded(shift.data(), r), m = padded(norm.mean, r);
  std::vector<float> part(static_cast<size_t>(groups * examples * 2 * kLanes));
#pragma omp parallel for collapse(2) schedule(static) if (parallel(r))
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t n = 0; n < examples; ++n) {
      const int64_t at = run_offset(r, g, n);
      float* out = &part[static_cast<size_t>((g * examples + n) * 2 * kLanes)];
      norm_clip_runs::clip_grad_sums(x + at, dy + at, r.positions, r.position_stride, &s[g * kLanes], &t[g * kLanes],
                                     &m[g * kLanes], clip.lo, clip.hi, out, out + kLanes);
    }
  // Per channel: d beta = sum g; d gamma = sum g * x̂ = inv_std * sum g (x - mean); and the coefficients of
  // dx = gamma inv_std (g - d beta / M - x̂ d gamma / M).
  std::vector<float> a(groups * kLanes, 0.0f), b(groups * kLanes, 0.0f), c(groups * kLanes, 0.0f);
  const double count = static_cast<double>(r.count());
  for (int64_t g = 0; g < groups; ++g) {
    double sums[kLanes] = {}, centred[kLanes] = {};
    for (int64_t n = 0; n < examples; ++n) {
      const float* in = &part[static_cast<size_t>((g * examples + n) * 2 * kLanes)];
      for (int64_t j = 0; j < kLanes; ++j) {
        sums[j] += in[j];
        centred[j] += in[kLanes + j];
      }
    }
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
#pragma omp parallel for collapse(2) schedule(static) if (parallel(r))
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t n = 0; n < examples; ++n) {
      const int64_t at = run_offset(r, g, n);
      const int64_t k = g * kLanes;
      norm_clip_runs::clip_backward(x + at, dy + at, dx + at, r.positions, r.position_stride, &s[k], &t[k], &m[k],
                                    &a[k], &b[k], &c[k], clip.lo, clip.hi);
    }
}

}  // namespace onednn
