// A depthwise conv2d (groups = input channels = filters, dilation 1, kernel height at most 4) as one step on
// depthwise_kernel.hpp, where oneDNN's effective ISA has AVX-512 VNNI and the CPU VBMI. Anything else goes on to
// weighted.cpp's other paths (oneDNN's convolution, or exact_conv.hpp without VNNI).
//
// Header-only because the plugin's source list is not this directory's to change; weighted.cpp includes it.
#pragma once

#include "../layout.hpp"
#include "depthwise_kernel.hpp"
#include "qlayer_util.hpp"

#include <memory>

namespace onednn::int8 {

class DepthwiseStep : public QStep {
 public:
  // The step for `node`, or null when the kernel does not apply.
  static std::unique_ptr<QStep> try_build(const NodeSpec& node, QBuilder& b) {
    static const bool cpu_ok = depthwise_cpu_supported();
    if (!cpu_ok || node.inputs.size() != 1) return nullptr;
    QValue& in = b.value(node.inputs[0]);
    if (in.shape.size() != 3) return nullptr;
    const ConvGeometry g = conv_geometry(node, in.shape);
    if (g.G != g.C || g.F != g.C || g.dilation != std::vector<int64_t>{1, 1} || g.kernel[0] > DepthwiseShape::max_kh)
      return nullptr;
    check_output_shape(node, {g.OH, g.OW, g.F});
    DepthwiseShape s;
    s.H = g.H, s.W = g.W, s.C = g.C, s.OH = g.OH, s.OW = g.OW;
    s.kh = g.kernel[0], s.kw = g.kernel[1], s.sh = g.strides[0], s.sw = g.strides[1];
    s.pt = g.padding[0], s.pb = g.padding[1], s.pl = g.padding[2], s.pr = g.padding[3];
    return std::unique_ptr<QStep>(new DepthwiseStep(node, b, in, s));
  }

  void prepare(const QParamStore& params, dnnl::stream&) override {
    const QParam& kernel = params.get(r_.kernel);
    pack_depthwise_weights(shape_, kernel.s8.data(), weights_);
    const int32_t* bias = r_.bias.empty() ? nullptr : params.get(r_.bias).s32.data();
    const int64_t C = shape_.C, taps = shape_.kh * shape_.kw;
    for (int64_t c = 0; c < C; ++c) {
      // Padded taps hold the zero point too, so sum_taps (q - zp) w = sum_taps q w - zp * sum_taps w exactly.
      int64_t weight_sum = 0;
      for (int64_t t = 0; t < taps; ++t) weight_sum += kernel.s8[t * C + c];
      const float scale = r_.scales.size() == 1 ? r_.scales[0] : r_.scales[c];
      weights_.scale[c] = scale;
      weights_.bias[c] = static_cast<float>(bias ? bias[c] : 0) - static_cast<float>(r_.zp_in * weight_sum) +
                         static_cast<float>(r_.zp_out) / scale;
    }
  }

  void run(dnnl::stream&) override {
    depthwise_forward(shape_, batch_, static_cast<const uint8_t*>(src_.get_data_handle()),
                      static_cast<uint8_t>(r_.zp_in), weights_, static_cast<uint8_t*>(dst_.get_data_handle()), scratch_);
  }

 private:
  DepthwiseStep(const NodeSpec& node, QBuilder& b, QValue& in, const DepthwiseShape& s) : shape_(s), batch_(b.batch()) {
    checked_param(node, b, "kernel", true, {s.kh, s.kw, 1, s.C}, true);
    checked_param(node, b, "bias", false, {s.C}, false);
    r_ = own_kernel_requant(node, b, in.quant, s.C);
    weights_.lo = r_.lo;
    weights_.hi = r_.hi;
    const auto lanes = static_cast<size_t>(s.blocks() * 16);
    weights_.bias.assign(lanes, 0.0f);
    weights_.scale.assign(lanes, 0.0f);
    src_ = b.canonical(in);
    dst_ = b.define(node.name, node.shape, output_quant(node, b), canonical_md(b.batch(), node.shape, dt::u8)).mem;
  }

  DepthwiseShape shape_;
  int64_t batch_;
  OwnKernelRequant r_;
  DepthwiseWeights weights_;
  dnnl::memory src_, dst_;
  std::vector<uint8_t> scratch_;
};

}  // namespace onednn::int8
