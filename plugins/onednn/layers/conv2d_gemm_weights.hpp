// A bf16 convolution's weight gradient on AMX as one matmul per chunk of examples: the chunk's output gradient,
// transposed (filters x positions), times its input unrolled into patches (positions x taps x channels), the
// chunks' products summed in chunk order.
//
// Why: oneDNN 2.6's AMX backward-weights kernel is slow on small output maps, and the float32 kernel that
// conv2d_choice.hpp sends them to instead, with bf16 -> float32 copies of both maps, took 4.0-4.2 ms a step for
// each of the bench ResNet's two 3x3 convolutions with 7x7 outputs on the 2-vCPU Xeon, about a sixth of its bf16
// step together (issue 14). One chunk of 16 examples on one core: 7x7, 128 -> 128 channels: patches 0.06 ms,
// transpose 0.05, matmul 0.40; 14x14 -> 7x7 at stride 2, 64 -> 128: 0.03, 0.05, 0.17. On larger maps (28x28,
// 14x14 at stride 1) it was slower than oneDNN's AMX kernel, so it replaces only the float32 fallback.
//
// The products of bf16 values are exact in float32 and AMX sums them in float32, as oneDNN's bf16 kernels do; each
// chunk runs on one thread, so the result does not depend on which thread took which chunk.
#pragma once

#include "../layer.hpp"
#include "conv2d_choice.hpp"

#include <memory>
#include <vector>

namespace onednn {

class GemmWeightGradient {
 public:
  // Where it applies: bf16 under AMX, one group, no dilation, a batch that cuts into chunks (batch_chunks.hpp) on
  // two or more threads, the input and output channels-last (`src`, `dst`: the whole batch's), and oneDNN's AMX
  // matmul for the product. Null elsewhere.
  static std::unique_ptr<GemmWeightGradient> make(const ConvGeometry& g, const md& src, const md& dst,
                                                   LayerBuilder& b);

  // The gradient's layout: dims {F, C, kh, kw} laid out [F][kh][kw][C] (ohwi), float32.
  const md& diff_weights_desc() const { return diff_weights_; }
  // target (diff_weights_desc()) = the weight gradient of the whole batch from the layer's input `src` and its
  // output's gradient `diff_dst`, on the plan's threads.
  void run(const dnnl::memory& src, const dnnl::memory& diff_dst, const dnnl::memory& target);

 private:
  struct Lane {  // one thread's
    dnnl::stream stream;
    std::vector<uint16_t> patches, transposed;
    dnnl::memory product;  // the matmul's result: a chunk's part, its handle set per chunk
    Args args;
  };

  ConvGeometry g_;
  int64_t examples_ = 0, chunks_ = 0, positions_ = 0, taps_ = 0;  // positions and taps of one chunk's matrices
  md diff_weights_;
  dnnl::matmul matmul_;
  std::vector<Lane> lanes_;
  std::vector<dnnl::memory> parts_;  // one per chunk, filled and summed within one backward

  void unroll(const uint16_t* x, uint16_t* patches) const;
  void transpose(const uint16_t* dy, uint16_t* transposed) const;
};

}  // namespace onednn
