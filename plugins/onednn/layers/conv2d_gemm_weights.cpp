#include "conv2d_gemm_weights.hpp"

#include "../batch_chunks.hpp"
#include "../thread_scope.hpp"

#include <cstring>
#include <string_view>

namespace onednn {

std::unique_ptr<GemmWeightGradient> GemmWeightGradient::make(const ConvGeometry& g, const md& src, const md& dst,
                                                              LayerBuilder& b) {
  if (b.compute_type() != dt::bf16 || !amx_allowed() || g.G != 1 || g.kernel.size() != 2 ||
      g.dilation != std::vector<int64_t>{1, 1})
    return nullptr;
  const int64_t N = b.batch(), examples = chunk_examples(N, b.threads());
  if (examples == 0 || src != md({N, g.C, g.H, g.W}, dt::bf16, tag::nhwc) ||
      dst != md({N, g.F, g.OH, g.OW}, dt::bf16, tag::nhwc))
    return nullptr;
  auto w = std::unique_ptr<GemmWeightGradient>(new GemmWeightGradient());
  w->g_ = g;
  w->examples_ = examples;
  w->chunks_ = N / examples;
  w->positions_ = examples * g.OH * g.OW;
  w->taps_ = g.kernel[0] * g.kernel[1] * g.C;
  w->diff_weights_ = md({g.F, g.C, g.kernel[0], g.kernel[1]}, dt::f32, tag::ohwi);
  const md a({g.F, w->positions_}, dt::bf16, tag::ab), patches({w->positions_, w->taps_}, dt::bf16, tag::ab),
      product({g.F, w->taps_}, dt::f32, tag::ab);
  dnnl::matmul::primitive_desc pd;
  try {
    ThreadScope one(1);  // each chunk's product runs on one thread
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, patches, product), b.attr(), b.engine());
    if (!std::string_view(pd.impl_info_str()).ends_with("amx_bf16")) return nullptr;
    w->matmul_ = dnnl::matmul(pd);
  } catch (const dnnl::error&) {
    return nullptr;
  }
  w->lanes_.resize(static_cast<size_t>(b.threads()));
  for (size_t i = 0; i < w->lanes_.size(); ++i) {
    Lane& lane = w->lanes_[i];
    lane.stream = dnnl::stream(b.engine());
    lane.patches.assign(static_cast<size_t>(w->positions_ * w->taps_), 0);
    lane.transposed.assign(static_cast<size_t>(g.F * w->positions_), 0);
    lane.product = dnnl::memory(product, b.engine(), DNNL_MEMORY_NONE);
    lane.args = {{DNNL_ARG_SRC, dnnl::memory(a, b.engine(), lane.transposed.data())},
                 {DNNL_ARG_WEIGHTS, dnnl::memory(patches, b.engine(), lane.patches.data())},
                 {DNNL_ARG_DST, lane.product}};
    b.use_lane_scratchpad(pd, lane.args, static_cast<int>(i));
  }
  for (int64_t c = 0; c < w->chunks_; ++c) w->parts_.push_back(b.transient_grad(w->diff_weights_));
  return w;
}

// Row p = (example, output row, output column) of the chunk's patches: for each tap (kh, kw), the C channels of
// the input pixel it reads, zero where the tap falls in the padding.
void GemmWeightGradient::unroll(const uint16_t* x, uint16_t* patches) const {
  const ConvGeometry& g = g_;
  const size_t run = static_cast<size_t>(g.C) * sizeof(uint16_t);
  for (int64_t n = 0; n < examples_; ++n)
    for (int64_t oh = 0; oh < g.OH; ++oh)
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        uint16_t* row = patches + ((n * g.OH + oh) * g.OW + ow) * taps_;
        for (int64_t kh = 0; kh < g.kernel[0]; ++kh)
          for (int64_t kw = 0; kw < g.kernel[1]; ++kw) {
            const int64_t ih = oh * g.strides[0] + kh - g.padding[0], iw = ow * g.strides[1] + kw - g.padding[2];
            uint16_t* out = row + (kh * g.kernel[1] + kw) * g.C;
            if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) std::memset(out, 0, run);
            else std::memcpy(out, x + ((n * g.H + ih) * g.W + iw) * g.C, run);
          }
      }
}

// The chunk's output gradient [positions][F] as [F][positions], 16 positions at a time (their rows stay in cache
// while every filter's column is written).
void GemmWeightGradient::transpose(const uint16_t* dy, uint16_t* transposed) const {
  const int64_t F = g_.F, P = positions_;
  for (int64_t p0 = 0; p0 < P; p0 += 16)
    for (int64_t f = 0; f < F; ++f)
      for (int64_t p = p0; p < std::min(p0 + 16, P); ++p) transposed[f * P + p] = dy[p * F + f];
}

void GemmWeightGradient::run(const dnnl::memory& src, const dnnl::memory& diff_dst, const dnnl::memory& target) {
  const auto* x = static_cast<const uint16_t*>(src.get_data_handle());
  const auto* dy = static_cast<const uint16_t*>(diff_dst.get_data_handle());
  const int64_t in = examples_ * g_.H * g_.W * g_.C, out = examples_ * g_.OH * g_.OW * g_.F;
  for_each_chunk(chunks_, static_cast<int>(lanes_.size()), [&](int64_t c, int i) {
    Lane& lane = lanes_[static_cast<size_t>(i)];
    unroll(x + c * in, lane.patches.data());
    transpose(dy + c * out, lane.transposed.data());
    lane.product.set_data_handle(parts_[static_cast<size_t>(c)].get_data_handle());
    Exec::run_on(lane.stream, matmul_, lane.args);
  });
  sum_in_order(parts_, target, static_cast<int>(lanes_.size()));
}

}  // namespace onednn
