// conv2d with few input channels, not a multiple of 4 (oneDNN pads those to 4, wasting lanes), and few input
// values per kernel row (kw * C <= 16; groups 1, dilation 1, at most 64 filters) as one step on
// small_conv_kernel.hpp, taking in the max_pool that alone reads its output when there is one. Anything else, or
// a CPU without AVX-512 VNNI, goes to weighted.cpp (oneDNN's convolution, or exact_conv.hpp without VNNI).
//
// Header-only because the plugin's source list is not this directory's to change; weighted.cpp includes it.
#pragma once

#include "../layout.hpp"
#include "qlayer_util.hpp"
#include "small_conv_kernel.hpp"

#include <memory>

namespace onednn::int8 {

class SmallConvStep : public QStep {
 public:
  // The step for `node` (and for the max pool it absorbs, if any), or null when the kernel does not apply.
  static std::unique_ptr<QStep> try_build(const NodeSpec& node, QBuilder& b) {
    static const bool cpu_ok = small_conv_cpu_supported();
    if (!cpu_ok || node.inputs.size() != 1) return nullptr;
    QValue& in = b.value(node.inputs[0]);
    if (in.shape.size() != 3 || node.attr_int("groups", 1) != 1 ||
        node.attr_ints("dilation", 2, {1, 1}) != std::vector<int64_t>{1, 1})
      return nullptr;
    SmallConvShape s;
    s.H = in.shape[0], s.W = in.shape[1], s.C = in.shape[2];
    s.F = node.attr_int("filters");
    const auto k = node.attr_ints("kernel", 2);
    const auto stride = node.attr_ints("strides", 2, {1, 1});
    const auto pad = node.attr_ints("padding", 4, {0, 0, 0, 0});
    s.kh = k[0], s.kw = k[1], s.sh = stride[0], s.sw = stride[1];
    s.pt = pad[0], s.pb = pad[1], s.pl = pad[2], s.pr = pad[3];
    if (s.C % 4 == 0 || s.F < 1 || s.F > 64 || s.kh < 1 || s.kw < 1 || s.kw * s.C > 16 ||
        s.groups() > SmallConvShape::max_groups || s.sh < 1 || s.sw < 1 ||
        *std::min_element(pad.begin(), pad.end()) < 0 || s.H + s.pt + s.pb < s.kh || s.W + s.pl + s.pr < s.kw)
      return nullptr;
    const int64_t OH = (s.H + s.pt + s.pb - s.kh) / s.sh + 1, OW = (s.W + s.pl + s.pr - s.kw) / s.sw + 1;
    if (OH < 1 || OW < 1 || node.shape != Shape{OH, OW, s.F}) return nullptr;  // QConv2D explains the error
    s.PH = OH, s.PW = OW;
    const NodeSpec* pool = fusable_pool(node, b, s);
    return std::unique_ptr<QStep>(new SmallConvStep(node, b, in, s, pool));
  }

  void prepare(const QParamStore& params, dnnl::stream&) override {
    const QParam& kernel = params.get(r_.kernel);
    pack_small_conv_weights(shape_, kernel.s8.data(), weights_);
    const int32_t* bias = r_.bias.empty() ? nullptr : params.get(r_.bias).s32.data();
    const int64_t F = shape_.F, taps = shape_.kh * shape_.kw * shape_.C;
    for (int64_t c = 0; c < F; ++c) {
      // Padded taps hold the zero point too, so sum_taps (q - zp) w = sum_taps q w - zp * sum_taps w exactly.
      int64_t weight_sum = 0;
      for (int64_t t = 0; t < taps; ++t) weight_sum += kernel.s8[t * F + c];
      const float scale = r_.scales.size() == 1 ? r_.scales[0] : r_.scales[c];
      const float fold = -static_cast<float>(r_.zp_in * weight_sum);
      weights_.scale[c] = scale;
      weights_.bias[c] = static_cast<float>(bias ? bias[c] : 0) + fold + static_cast<float>(r_.zp_out) / scale;
    }
  }

  void run(dnnl::stream&) override {
    small_conv_forward(shape_, batch_, static_cast<const uint8_t*>(src_.get_data_handle()),
                       static_cast<uint8_t>(r_.zp_in), weights_, static_cast<uint8_t*>(dst_.get_data_handle()), scratch_);
  }

 private:
  SmallConvStep(const NodeSpec& node, QBuilder& b, QValue& in, const SmallConvShape& s, const NodeSpec* pool)
      : shape_(s), batch_(b.batch()) {
    checked_param(node, b, "kernel", true, {s.kh, s.kw, s.C, s.F}, true);
    checked_param(node, b, "bias", false, {s.F}, false);
    r_ = own_kernel_requant(node, b, in.quant, s.F);
    const ActivationQuant& out = output_quant(node, b);
    weights_.lo = r_.lo;
    weights_.hi = r_.hi;
    const auto lanes = static_cast<size_t>(s.lane_blocks() * 16);
    weights_.bias.assign(lanes, 0.0f);
    weights_.scale.assign(lanes, 0.0f);
    src_ = b.canonical(in);
    const NodeSpec& produced = pool ? *pool : node;
    dst_ = b.define(produced.name, produced.shape, out, canonical_md(b.batch(), produced.shape, dt::u8)).mem;
    if (pool) b.absorb(*pool);
  }

  // The max_pool that is the only reader of the convolution's output, unpadded and keeping its quantization (as
  // the contract requires): then `s` gets its window and the step writes the pool's output instead.
  static const NodeSpec* fusable_pool(const NodeSpec& node, const QBuilder& b, SmallConvShape& s) {
    const NodeSpec* pool = b.sole_reader(node.name);
    if (pool == nullptr || pool->op != "max_pool" || pool->inputs.size() != 1) return nullptr;
    const auto k = pool->attr_ints("pool", 2);
    const auto stride = pool->attr_ints("strides", 2, k);
    const auto pad = pool->attr_ints("padding", 4, {0, 0, 0, 0});
    if (k[0] < 1 || k[1] < 1 || stride[0] < 1 || stride[1] < 1 || k[0] > s.PH || k[1] > s.PW ||
        pad != std::vector<int64_t>{0, 0, 0, 0})
      return nullptr;
    const int64_t PH = (s.PH - k[0]) / stride[0] + 1, PW = (s.PW - k[1]) / stride[1] + 1;
    if (pool->shape != Shape{PH, PW, s.F} || !output_quant(*pool, b).same_as(output_quant(node, b))) return nullptr;
    s.pkh = k[0], s.pkw = k[1], s.psh = stride[0], s.psw = stride[1], s.PH = PH, s.PW = PW;
    return pool;
  }

  SmallConvShape shape_;
  int64_t batch_;
  OwnKernelRequant r_;
  SmallConvWeights weights_;
  dnnl::memory src_, dst_;
  std::vector<uint8_t> scratch_;
};

}  // namespace onednn::int8
