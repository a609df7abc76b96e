#include "depthwise_grad.hpp"

#include "simd.hpp"

#include <omp.h>

#include <algorithm>
#include <vector>

namespace onednn {
namespace {

using simd::load;
using simd::store;
using simd::Vec;

// One example's run of R channels. dy is first copied into `buf`, [OH + 2M][OW + 2M][R] with a zero margin of M
// = max(kh, kw) around it, so that every tap below reads inside the buffer. Then each input position sums, in
// registers, the taps whose window placement put it under them: with strides, only the taps of its residue class
// (ky = (y + pt) mod sh, + sh, ...), each meeting the output row (y + pt - ky) / sh. `taps` holds the run's
// weights, [kh * kw][R].
template <int W, int R, int S>
[[gnu::always_inline]] inline void run_backward(const float* dy, int64_t dy_stride, const float* taps,
                                                const DepthwiseGeometry& g, int64_t margin, float* buf, float* dx,
                                                int64_t dx_stride) {
  using F = typename Vec<W>::F;
  constexpr int K = R / W;
  const int64_t M = margin, bw = g.OW + 2 * M;
  std::fill(buf, buf + M * bw * R, 0.0f);  // the margin's top rows
  for (int64_t oy = 0; oy < g.OH; ++oy) {
    float* line = buf + (oy + M) * bw * R;
    std::fill(line, line + M * R, 0.0f);
    for (int64_t ox = 0; ox < g.OW; ++ox) {
      const float* from = dy + (oy * g.OW + ox) * dy_stride;
      float* to = line + (ox + M) * R;
#pragma GCC unroll 4
      for (int k = 0; k < K; ++k) store(to + k * W, load<F>(from + k * W));
    }
    std::fill(line + (g.OW + M) * R, line + bw * R, 0.0f);
  }
  std::fill(buf + (g.OH + M) * bw * R, buf + (g.OH + 2 * M) * bw * R, 0.0f);  // and its bottom rows
  // Strides fixed at compile time where they are 1 or 2, so the divisions below are shifts.
  const int64_t sh = S > 0 ? S : g.sh, sw = S > 0 ? S : g.sw;
  for (int64_t y = 0; y < g.H; ++y) {
    const int64_t ry = (y + g.pt) % sh, row0 = (y + g.pt - ry) / sh + M;  // the output row of tap ry, in buf
    for (int64_t x = 0; x < g.W; ++x) {
      const int64_t rx = (x + g.pl) % sw, col0 = (x + g.pl - rx) / sw + M;
      F acc[K] = {};
      for (int64_t ky = ry, row = row0; ky < g.kh; ky += sh, --row) {
        const float* line = buf + (row * bw + col0) * R;
        const float* wrow = taps + ky * g.kw * R;
        for (int64_t kx = rx, col = 0; kx < g.kw; kx += sw, ++col) {
          const float* at = line - col * R;
          const float* w = wrow + kx * R;
#pragma GCC unroll 4
          for (int k = 0; k < K; ++k) acc[k] += load<F>(at + k * W) * load<F>(w + k * W);
        }
      }
      float* out = dx + (y * g.W + x) * dx_stride;
#pragma GCC unroll 4
      for (int k = 0; k < K; ++k) store(out + k * W, acc[k]);
    }
  }
}

using RunFn = void (*)(const float*, int64_t, const float*, const DepthwiseGeometry&, int64_t, float*, float*,
                       int64_t);

#define RAMJET_DEPTHWISE_GRAD(suffix, attributes, W, R, S)                                                       \
  attributes void run_backward_##suffix(const float* dy, int64_t dys, const float* taps,                         \
                                        const DepthwiseGeometry& g, int64_t margin, float* buf, float* dx,       \
                                        int64_t dxs) {                                                           \
    run_backward<W, R, S>(dy, dys, taps, g, margin, buf, dx, dxs);                                               \
  }
#define RAMJET_DEPTHWISE_GRADS(isa, attributes, W)                       \
  RAMJET_DEPTHWISE_GRAD(isa##_16_any, attributes, W, 16, 0)              \
  RAMJET_DEPTHWISE_GRAD(isa##_16_s1, attributes, W, 16, 1)               \
  RAMJET_DEPTHWISE_GRAD(isa##_16_s2, attributes, W, 16, 2)               \
  RAMJET_DEPTHWISE_GRAD(isa##_8_any, attributes, W, 8, 0)                \
  RAMJET_DEPTHWISE_GRAD(isa##_8_s1, attributes, W, 8, 1)                 \
  RAMJET_DEPTHWISE_GRAD(isa##_8_s2, attributes, W, 8, 2)                 \
  constexpr RunFn kernels_##isa[2][3] = {{run_backward_##isa##_16_any, run_backward_##isa##_16_s1, run_backward_##isa##_16_s2}, \
                                         {run_backward_##isa##_8_any, run_backward_##isa##_8_s1, run_backward_##isa##_8_s2}};
RAMJET_DEPTHWISE_GRADS(avx2, __attribute__((target("avx2,fma"))), 8)
RAMJET_DEPTHWISE_GRADS(baseline, , 4)
#undef RAMJET_DEPTHWISE_GRADS
#undef RAMJET_DEPTHWISE_GRAD

// The loops for runs of `lanes` channels, with the strides fixed where both are 1 or both 2.
RunFn run_fn(int64_t lanes, const DepthwiseGeometry& g) {
  static const bool avx2 = simd::use_avx2();
  const int width = lanes == 8 ? 1 : 0;
  const int stride = g.sh == g.sw && (g.sh == 1 || g.sh == 2) ? static_cast<int>(g.sh) : 0;
  return avx2 ? kernels_avx2[width][stride] : kernels_baseline[width][stride];
}

}  // namespace

DepthwiseBackwardData::DepthwiseBackwardData(const DepthwiseGeometry& g, const ChannelRuns& in,
                                             const ChannelRuns& out)
    : g_(g), in_(in), out_(out) {
  margin_ = std::max(g.kh, g.kw);
  runs_.assign(static_cast<size_t>(in.groups() * g.kh * g.kw * in.lanes), 0.0f);
}

void DepthwiseBackwardData::run(const float* dy, const float* kernel, float* dx) {
  const int64_t R = in_.lanes, groups = in_.groups(), C = in_.channels, taps = g_.kh * g_.kw;
  for (int64_t t = 0; t < taps; ++t)
    for (int64_t c = 0; c < C; ++c) runs_[static_cast<size_t>(((c / R) * taps + t) * R + c % R)] = kernel[t * C + c];
  const int64_t per_thread = (g_.OH + 2 * margin_) * (g_.OW + 2 * margin_) * R;
  const auto wanted = static_cast<size_t>(std::max(omp_get_max_threads(), 1) * per_thread);
  if (buffers_.size() < wanted) buffers_.resize(wanted);  // only when the thread count grew
  const RunFn fn = run_fn(R, g_);
  const int64_t N = in_.examples;
  const DepthwiseGeometry& g = g_;
  const ChannelRuns &in = in_, &out = out_;
  float* const buffers = buffers_.data();
  const float* const weights = runs_.data();
  const int64_t margin = margin_;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n = 0; n < N; ++n)
    for (int64_t group = 0; group < groups; ++group)
      fn(dy + n * out.example_stride + group * out.group_stride, out.position_stride, weights + group * taps * R, g,
         margin, buffers + omp_get_thread_num() * per_thread, dx + n * in.example_stride + group * in.group_stride,
         in.position_stride);
}

}  // namespace onednn
