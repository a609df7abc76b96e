// What conv2d.cpp and conv2d_chunked.cpp both decide about a convolution: which algorithm pays, and whether
// oneDNN fell back to its reference kernel.
#pragma once

#include "../common.hpp"
#include "../isa.hpp"
#include "../layout.hpp"

#include <string_view>
#include <vector>

namespace onednn {

inline bool is_reference(const dnnl::primitive_desc_base& pd) {
  return std::string_view(pd.impl_info_str()).starts_with("ref");
}

// The largest output map (rows x columns) whose bf16 weight gradient runs in float32; see f32_weight_gradient_pays.
constexpr int64_t kF32WeightGradientMaxOutputPositions = 49;

// Winograd's F(4x4, 3x3) does a 3x3 stride-1 float32 convolution's forward, backward-data and backward-weights
// with fewer multiplications. Measured on oneDNN 2.6, AVX-512, batch 128, 2 threads (the ResNet of bench/train):
// 1.3-1.9x faster from 32 channels in and out, but 3-4x slower for a one-channel stem, so only wide convolutions
// take it. Inference keeps direct convolution: its forward-only kernel (brgconv) was 3x faster than Winograd's
// on the CNN's 32 -> 64 channel layer at batch 256. The rounding differs from direct convolution's within
// float32's tolerance, as cuDNN's Winograd does.
inline bool winograd_pays(const ConvGeometry& g, dt type, bool sequence, bool training) {
  return training && !sequence && type == dt::f32 && g.G == 1 && g.kernel == std::vector<int64_t>{3, 3} &&
         g.strides == std::vector<int64_t>{1, 1} && g.dilation == std::vector<int64_t>{1, 1} && g.C >= 16 && g.F >= 16;
}

// A bf16 convolution of one input channel (an image's stem) in channels-last maps where AMX runs the layers after
// it: oneDNN then picks brgconv for its forward and AMX for its weight gradient, and the map it writes is the
// layout the next convolutions read. With its choice of layout (16-channel blocks) it took the direct AVX-512 bf16
// kernels, and two reorders into channels-last, forward and backward, followed. Measured on the 2-core Xeon,
// batch 128: forward 0.79 ms and weight gradient 0.63 ms, against 1.4 and 1.0 ms blocked, before the reorders.
inline bool channels_last_stem(const ConvGeometry& g, dt type) {
  return type == dt::bf16 && g.C == 1 && amx_allowed();
}

// oneDNN 2.6's AMX backward-weights kernel for bf16 is slow where the output map is small; there the float32
// kernel, fed float32 copies of the input and of the output's gradient, is faster, copies included. The weight
// gradient is float32 either way; only the products' rounding differs (float32's is finer). Measured on the
// 2-core Xeon (AMX), batch 128, 2 threads, the ResNet of bench/train's shapes (float32 time with the copies over
// bf16's): 0.41-0.64 at 7x7 outputs, 0.92-1.01 at 14x14, 1.6-3.9 at 28x28 — so 7x7 and smaller only. There
// conv2d.cpp first tries AMX matmuls over chunks of the batch (conv2d_gemm_weights.hpp), faster still; the float32
// kernel is what remains where those do not apply (one thread, a bias, another layout).
inline bool f32_weight_gradient_pays(const ConvGeometry& g, const dnnl::primitive_desc_base& bf16_weights_pd) {
  if (!std::string_view(bf16_weights_pd.impl_info_str()).ends_with("amx_bf16")) return false;
  return g.OH * g.OW <= kF32WeightGradientMaxOutputPositions;
}

// A bf16 layer's weight gradient computed in float32 (conv2d.cpp, and conv2d_chunked.cpp's chunks): the
// backward-weights descriptor of algorithm `a` over the float32 maps `src` and `dst` (tag::any lets oneDNN choose
// their layouts), hinted by the forward it belongs to. Throws dnnl::error where oneDNN has no such kernel.
inline dnnl::convolution_backward_weights::primitive_desc f32_weights_pd(const ConvGeometry& g, dnnl::algorithm a,
                                                                          const md& src, const md& dst,
                                                                          const md& bias, const dnnl::primitive_attr& attr,
                                                                          const dnnl::engine& engine) {
  const md weights(hwio_kernel_md(g.kernel[0], g.kernel[1], g.C, g.F, g.G, dt::f32).dims(), dt::f32, tag::any);
  const dnnl::memory::dims strides{g.strides[0], g.strides[1]}, dilates{g.dilation[0] - 1, g.dilation[1] - 1},
      pad_l{g.padding[0], g.padding[2]}, pad_r{g.padding[1], g.padding[3]};
  const dnnl::convolution_forward::primitive_desc hint(
      {dnnl::prop_kind::forward_training, a, src, weights, bias, dst, strides, dilates, pad_l, pad_r}, attr, engine);
  return dnnl::convolution_backward_weights::primitive_desc(
      {a, hint.src_desc(), weights, bias, hint.dst_desc(), strides, dilates, pad_l, pad_r}, attr, engine, hint);
}

}  // namespace onednn
