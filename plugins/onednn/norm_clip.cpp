#include "norm_clip.hpp"

#include "isa.hpp"
#include "loop_share.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <immintrin.h>
#include <limits>
#include <utility>
#include <vector>

// The loops over one run of R channels (norm_clip_loops.inc) are built for AVX-512 (with and without its bf16
// conversion), for AVX2 and for the x86-64 baseline (SSE2), and chosen when first called: the plugin is built for
// any x86-64, and the loops are bound by memory only once they move whole vectors. The vectors never cross a real
// call (their helpers are always inlined into one instruction set's loops), so GCC's note that passing one would
// change with the target's ABI does not apply (push and pop keep that out of the files a unity build puts after
// this one).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace onednn {
namespace {

using bf16 = uint16_t;  // a bf16 value's bits: the upper half of a float32's

// One run's per-channel constants, R floats each.
struct RunNorm {
  const float* mean;
  const float* scale;  // gamma / sqrt(variance + epsilon)
  const float* beta;
};

// The loops of one instruction set, run width and value type; their table takes untyped pointers, and the runs'
// type chooses the table.
struct RunKernels {
  void (*moments)(const void* x, int64_t n, int64_t s, float* sums, float* squares, float* shift);
  void (*normalize_clip)(const void* x, void* y, int64_t n, int64_t s, const RunNorm& m, float lo, float hi);
  void (*clip_grad_sums)(const void* x, const void* dy, int64_t n, int64_t s, const RunNorm& m, float lo, float hi,
                         float* o1, float* o2);
  void (*clip_backward)(const void* x, const void* dy, void* dx, int64_t n, int64_t s, const RunNorm& m,
                        const float* a, const float* b, const float* c, float lo, float hi);
};

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma")
namespace avx512bf16 {  // AVX-512 with the instruction that rounds floats to bf16
constexpr int kWidth = 16;
constexpr bool kBf16Instructions = true;
#include "norm_clip_loops.inc"
}  // namespace avx512bf16
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,fma")
namespace avx512 {
constexpr int kWidth = 16;
constexpr bool kBf16Instructions = false;
#include "norm_clip_loops.inc"
}  // namespace avx512
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2 {
constexpr int kWidth = 8;
constexpr bool kBf16Instructions = false;
#include "norm_clip_loops.inc"
}  // namespace avx2
#pragma GCC pop_options
namespace baseline {
constexpr int kWidth = 4;
constexpr bool kBf16Instructions = false;
#include "norm_clip_loops.inc"
}  // namespace baseline

enum class Isa { baseline, avx2, avx512, avx512bf16 };
Isa loop_isa() {
  if (avx512_bf16_allowed()) return Isa::avx512bf16;
  if (avx512_allowed()) return Isa::avx512;
  return avx2_allowed() ? Isa::avx2 : Isa::baseline;
}

// The widest loops this CPU runs over the runs' width and type.
const RunKernels& run_kernels(const ChannelRuns& r) {
  static const Isa isa = loop_isa();
  const bool b = r.type == dt::bf16;
  const RunKernels* k = nullptr;
  if (isa >= Isa::avx512bf16 && b) k = avx512bf16::table(r.lanes, b);
  if (!k && isa >= Isa::avx512) k = avx512::table(r.lanes, b);
  if (!k && isa >= Isa::avx2) k = avx2::table(r.lanes, b);
  if (!k) k = baseline::table(r.lanes, b);
  return *k;
}

// An element's offset in bytes.
int64_t bytes(const ChannelRuns& r, int64_t elements) { return elements * (r.type == dt::bf16 ? 2 : 4); }
const char* at(const void* base, const ChannelRuns& r, int64_t elements) {
  return static_cast<const char*>(base) + bytes(r, elements);
}
char* at(void* base, const ChannelRuns& r, int64_t elements) { return static_cast<char*>(base) + bytes(r, elements); }

constexpr int64_t kParallelMin = 1 << 15;  // values below which one thread is faster than waking a team

// Per-channel values copied into whole groups, padding lanes 0.
void pad_into(std::vector<float>& out, const float* per_channel, const ChannelRuns& r) {
  std::fill(out.begin(), out.end(), 0.0f);
  std::copy(per_channel, per_channel + r.channels, out.begin());
}

// A call's per-channel constants, padded to whole groups, in the scratch's mean, scale (gamma / sqrt(variance +
// epsilon)) and beta.
void pad_norm(const NormInputs& norm, const ChannelRuns& r, NormScratch& s) {
  pad_into(s.mean, norm.mean, r);
  pad_into(s.beta, norm.beta, r);
  std::fill(s.scale.begin(), s.scale.end(), 0.0f);
  for (int64_t c = 0; c < r.channels; ++c)
    s.scale[c] = static_cast<float>(norm.gamma[c] / std::sqrt(static_cast<double>(norm.variance[c]) + norm.epsilon));
}
RunNorm run_norm(const NormScratch& s, int64_t group, int64_t lanes) {
  return {&s.mean[group * lanes], &s.scale[group * lanes], &s.beta[group * lanes]};
}

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
  const LoopTicket ticket;
#pragma omp parallel if (parallel(r))
  {
    const LoopShare share(ticket);
#pragma omp for schedule(dynamic, kRunsPerHandout) nowait
    for (int64_t i = 0; i < total; ++i) {
      const int64_t j = reverse ? total - 1 - i : i;
      run(j % groups, j / groups);
    }
  }
}

// Up to three floats per lane for every run (its example's part of a channel's totals) in the scratch's parts,
// written by the threads in any order and added across examples in example order.
float* run_part(NormScratch& s, const ChannelRuns& r, int64_t group, int64_t example) {
  return &s.parts[static_cast<size_t>((group * r.examples + example) * 3 * r.lanes)];
}

// The moments of one run, in its part of the scratch.
void run_moments(const void* x, const ChannelRuns& r, NormScratch& s, const RunKernels& kernels, int64_t group,
                 int64_t example) {
  float* out = run_part(s, r, group, example);
  kernels.moments(at(x, r, run_offset(r, group, example)), r.positions, r.position_stride, out, out + r.lanes,
                  out + 2 * r.lanes);
}

// The group's totals per lane, in double, in the scratch's first and second.
void total(NormScratch& s, const ChannelRuns& r, int64_t group) {
  std::fill(s.first.begin(), s.first.end(), 0.0);
  std::fill(s.second.begin(), s.second.end(), 0.0);
  for (int64_t n = 0; n < r.examples; ++n) {
    const float* in = run_part(s, r, group, n);
    for (int64_t j = 0; j < r.lanes; ++j) {
      s.first[j] += in[j];
      s.second[j] += in[r.lanes + j];
    }
  }
}

}  // namespace

std::optional<ChannelRuns> channel_runs(const md& desc) {
  const dnnl_memory_desc_t& d = desc.data;
  if ((d.data_type != dnnl_f32 && d.data_type != dnnl_bf16) || d.format_kind != dnnl_blocked || d.offset0 != 0)
    return std::nullopt;
  if (d.ndims != 2 && d.ndims != 4) return std::nullopt;
  const dnnl_blocking_desc_t& b = d.format_desc.blocking;
  ChannelRuns r;
  r.type = desc.data_type();
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
    // Runs as wide as the channels allow, up to 64: a run then covers whole cache lines.
    r.lanes = r.channels % 64 == 0 ? 64 : r.channels % 32 == 0 ? 32 : r.channels % 16 == 0 ? 16 : 8;
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

std::optional<ClipBounds> clip_of(const std::string& activation) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  if (activation.empty()) return ClipBounds{-kInf, kInf};
  if (activation == "relu") return ClipBounds{0.0f, kInf};
  if (activation == "relu6") return ClipBounds{0.0f, 6.0f};
  return std::nullopt;
}

md channel_blocked(const md& desc) {
  const dnnl::memory::dims dims = desc.dims();
  if (dims.size() == 4) return md(dims, desc.data_type(), tag::aBcd16b);
  // oneDNN 2.6's C++ API names no [N, C] layout blocked by 16: [N, C, 1] blocked, without its unit dim.
  return md({dims[0], dims[1], 1}, desc.data_type(), tag::aBc16b).reshape(dims);
}

NormScratch::NormScratch(const ChannelRuns& r) {
  const auto padded = static_cast<size_t>(r.groups() * r.lanes), lanes = static_cast<size_t>(r.lanes);
  for (std::vector<float>* v : {&mean, &scale, &beta, &a, &b, &c}) v->assign(padded, 0.0f);
  parts.assign(padded * static_cast<size_t>(r.examples) * 3, 0.0f);
  first.assign(lanes, 0.0);
  second.assign(lanes, 0.0);
  reference.assign(lanes, 0.0);
}

void channel_moments(const void* x, const ChannelRuns& r, NormScratch& s, float* mean, float* variance) {
  const RunKernels& kernels = run_kernels(r);
  for_each_run(r, /*reverse=*/true, [&](int64_t g, int64_t n) { run_moments(x, r, s, kernels, g, n); });
  finish_moments(r, s, mean, variance);
}

void example_moments(const void* x, const ChannelRuns& r, NormScratch& s, int64_t first, int64_t count) {
  const RunKernels& kernels = run_kernels(r);
  for (int64_t n = first; n < first + count; ++n)
    for (int64_t g = 0; g < r.groups(); ++g) run_moments(x, r, s, kernels, g, n);
}

void finish_moments(const ChannelRuns& r, NormScratch& s, float* mean, float* variance) {
  // Each run's sums around its own first value, moved to sums around the channel's first run's (exact algebra, in
  // double), added in example order.
  const double P = static_cast<double>(r.positions), count = static_cast<double>(r.count());
  for (int64_t g = 0; g < r.groups(); ++g) {
    const float* first_run = run_part(s, r, g, 0);
    for (int64_t j = 0; j < r.lanes; ++j) s.reference[j] = first_run[2 * r.lanes + j];
    std::fill(s.first.begin(), s.first.end(), 0.0);
    std::fill(s.second.begin(), s.second.end(), 0.0);
    for (int64_t n = 0; n < r.examples; ++n) {
      const float* part = run_part(s, r, g, n);
      for (int64_t j = 0; j < r.lanes; ++j) {
        const double s1 = part[j], s2 = part[r.lanes + j], d = part[2 * r.lanes + j] - s.reference[j];
        s.first[j] += s1 + P * d;
        s.second[j] += s2 + d * (2.0 * s1 + P * d);
      }
    }
    for (int64_t j = 0; j < r.lanes && g * r.lanes + j < r.channels; ++j) {
      const double m = s.first[j] / count;
      mean[g * r.lanes + j] = static_cast<float>(s.reference[j] + m);
      variance[g * r.lanes + j] = static_cast<float>(std::max(0.0, s.second[j] / count - m * m));
    }
  }
}

void normalize_clip(const void* x, const ChannelRuns& r, const NormInputs& norm, ClipBounds clip, NormScratch& s,
                    void* y) {
  pad_norm(norm, r, s);
  const RunKernels& kernels = run_kernels(r);
  for_each_run(r, /*reverse=*/false, [&](int64_t g, int64_t n) {
    const int64_t run = run_offset(r, g, n);
    kernels.normalize_clip(at(x, r, run), at(y, r, run), r.positions, r.position_stride,
                           run_norm(s, g, r.lanes), clip.lo, clip.hi);
  });
}

void norm_clip_backward(const void* x, const void* dy, const ChannelRuns& r, const NormInputs& norm,
                        ClipBounds clip, NormScratch& s, void* dx, float* dgamma, float* dbeta) {
  const int64_t groups = r.groups(), C = r.channels, lanes = r.lanes;
  pad_norm(norm, r, s);
  const RunKernels& kernels = run_kernels(r);
  for_each_run(r, /*reverse=*/true, [&](int64_t g, int64_t n) {
    const int64_t run = run_offset(r, g, n);
    float* out = run_part(s, r, g, n);
    kernels.clip_grad_sums(at(x, r, run), at(dy, r, run), r.positions, r.position_stride, run_norm(s, g, lanes),
                           clip.lo, clip.hi, out, out + lanes);
  });
  // Per channel: d beta = sum g; d gamma = sum g * x̂ = inv_std * sum g (x - mean); and the coefficients of
  // dx = gamma inv_std (g - d beta / M - x̂ d gamma / M), padding lanes 0.
  std::fill(s.a.begin(), s.a.end(), 0.0f);
  std::fill(s.b.begin(), s.b.end(), 0.0f);
  std::fill(s.c.begin(), s.c.end(), 0.0f);
  const double count = static_cast<double>(r.count());
  for (int64_t g = 0; g < groups; ++g) {
    total(s, r, g);
    for (int64_t j = 0; j < lanes && g * lanes + j < C; ++j) {
      const int64_t ch = g * lanes + j;
      const double inv_std = 1.0 / std::sqrt(static_cast<double>(norm.variance[ch]) + norm.epsilon);
      const double gamma_inv_std = norm.gamma[ch] * inv_std;
      dbeta[ch] = static_cast<float>(s.first[j]);
      dgamma[ch] = static_cast<float>(s.second[j] * inv_std);
      s.a[ch] = static_cast<float>(gamma_inv_std);
      s.b[ch] = static_cast<float>(-gamma_inv_std * inv_std * inv_std * s.second[j] / count);
      s.c[ch] = static_cast<float>(-gamma_inv_std * s.first[j] / count);
    }
  }
  if (!dx) return;
  for_each_run(r, /*reverse=*/false, [&](int64_t g, int64_t n) {
    const int64_t run = run_offset(r, g, n), k = g * lanes;
    kernels.clip_backward(at(x, r, run), at(dy, r, run), at(dx, r, run), r.positions, r.position_stride,
                          run_norm(s, g, lanes), &s.a[k], &s.b[k], &s.c[k], clip.lo, clip.hi);
  });
}

}  // namespace onednn

#pragma GCC diagnostic pop
