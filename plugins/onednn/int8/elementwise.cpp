// add (TFLite's fixed-point ADD, bit for bit: inputs shifted left 20 bits, rescaled to twice the larger input
// scale, summed, rescaled to the output), a standalone relu/relu6/linear activation (TFLite's requantizing
// RELU), and softmax on the last axis (computed in float from the dequantized input, quantized to the output's
// 1/256 scale).
#include "../layout.hpp"
#include "fixed_point.hpp"
#include "qlayer_util.hpp"

#include <algorithm>
#include <cmath>

namespace onednn::int8 {
namespace {

class Add : public QStep {
 public:
  Add(const NodeSpec& node, QBuilder& b) {
    if (node.inputs.size() < 2) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "add takes two or more inputs");
    const ActivationQuant& out = output_quant(node, b);
    double twice_max = 0;
    for (const std::string& name : node.inputs) twice_max = std::max(twice_max, 2.0 * b.value(name).quant.scale);
    for (const std::string& name : node.inputs) {
      QValue& in = b.value(name);
      if (in.shape != node.shape)
        node.fail(RAMJET_ERR_INVALID_ARGUMENT, "input '" + name + "' " + shape_string(in.shape) + " differs from the output " +
                                                   shape_string(node.shape) + " (add does not broadcast)");
      inputs_.push_back({b.canonical(in), in.quant.zp_u8(), quantize_multiplier(in.quant.scale / twice_max)});
    }
    out_multiplier_ = quantize_multiplier(twice_max / ((1 << kLeftShift) * static_cast<double>(out.scale)));
    zp_out_ = out.zp_u8();
    const ClampRange clamp = activation_range(node, out);
    lo_ = clamp.lo + 128, hi_ = clamp.hi + 128;
    count_ = b.batch() * product(node.shape);
    dst_ = b.define(node.name, node.shape, out, canonical_md(b.batch(), node.shape, dt::u8)).mem;
  }

  void run(dnnl::stream&) override {
    auto* dst = static_cast<uint8_t*>(dst_.get_data_handle());
    const int64_t n = count_;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      int32_t sum = 0;
      for (const Input& in : inputs_) {
        const int32_t centred = static_cast<int32_t>(static_cast<const uint8_t*>(in.data)[i]) - in.zp;
        sum += multiply(centred * (1 << kLeftShift), in.multiplier);
      }
      dst[i] = static_cast<uint8_t>(std::clamp(multiply(sum, out_multiplier_) + zp_out_, lo_, hi_));
    }
  }

 private:
  static constexpr int kLeftShift = 20;  // TFLite's headroom for int8 ADD
  struct Input {
    Input(const dnnl::memory& m, int32_t z, QuantizedMultiplier q) : mem(m), data(m.get_data_handle()), zp(z), multiplier(q) {}
    dnnl::memory mem;
    const void* data;
    int32_t zp;
    QuantizedMultiplier multiplier;
  };
  std::vector<Input> inputs_;
  QuantizedMultiplier out_multiplier_;
  int32_t zp_out_ = 0, lo_ = 0, hi_ = 255;
  int64_t count_ = 0;
  dnnl::memory dst_;
};

class Requantize : public QStep {
 public:
  Requantize(const NodeSpec& node, QBuilder& b) {
    QValue& in = only_input(node, b);
    if (in.shape != node.shape) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "the output shape must equal the input's");
    const ActivationQuant& out = output_quant(node, b);
    const ClampRange clamp = activation_range(node, out);
    lo_ = clamp.lo + 128, hi_ = clamp.hi + 128;
    zp_in_ = in.quant.zp_u8(), zp_out_ = out.zp_u8();
    multiplier_ = quantize_multiplier(static_cast<double>(in.quant.scale) / out.scale);
    count_ = b.batch() * product(node.shape);
    src_ = b.canonical(in);
    dst_ = b.define(node.name, node.shape, out, canonical_md(b.batch(), node.shape, dt::u8)).mem;
  }

  void run(dnnl::stream&) override {
    const auto* src = static_cast<const uint8_t*>(src_.get_data_handle());
    auto* dst = static_cast<uint8_t*>(dst_.get_data_handle());
    const int64_t n = count_;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i)
      dst[i] = static_cast<uint8_t>(std::clamp(multiply(src[i] - zp_in_, multiplier_) + zp_out_, lo_, hi_));
  }

 private:
  QuantizedMultiplier multiplier_;
  int32_t zp_in_ = 0, zp_out_ = 0, lo_ = 0, hi_ = 255;
  int64_t count_ = 0;
  dnnl::memory src_, dst_;
};

class Softmax : public QStep {
 public:
  Softmax(const NodeSpec& node, QBuilder& b) {
    QValue& in = only_input(node, b);
    const int64_t axis = node.attr_int("axis", -1);
    if (axis != -1 && axis != static_cast<int64_t>(in.shape.size()))
      node.fail(RAMJET_ERR_UNSUPPORTED, "the int8 softmax runs on the last axis only");
    if (in.shape != node.shape) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "the output shape must equal the input's");
    in_ = in.quant, out_ = output_quant(node, b);
    width_ = in.shape.back();
    rows_ = b.batch() * product(in.shape) / width_;
    src_ = b.canonical(in);
    dst_ = b.define(node.name, node.shape, out_, canonical_md(b.batch(), node.shape, dt::u8)).mem;
  }

  void run(dnnl::stream&) override {
    const auto* src = static_cast<const uint8_t*>(src_.get_data_handle());
    auto* dst = static_cast<uint8_t*>(dst_.get_data_handle());
    const int64_t rows = rows_, width = width_;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const uint8_t* x = src + r * width;
      uint8_t* y = dst + r * width;
      const int32_t top = *std::max_element(x, x + width);
      float total = 0;
      for (int64_t c = 0; c < width; ++c) total += std::exp(static_cast<float>(x[c] - top) * in_.scale);
      for (int64_t c = 0; c < width; ++c) {
        const float p = std::exp(static_cast<float>(x[c] - top) * in_.scale) / total;
        y[c] = static_cast<uint8_t>(std::clamp(std::round(p / out_.scale) + out_.zp_u8(), 0.0f, 255.0f));
      }
    }
  }

 private:
  ActivationQuant in_, out_;
  int64_t rows_ = 0, width_ = 0;
  dnnl::memory src_, dst_;
};

}  // namespace

void build_add(const NodeSpec& node, QBuilder& b) { b.add(std::make_unique<Add>(node, b)); }
void build_softmax(const NodeSpec& node, QBuilder& b) { b.add(std::make_unique<Softmax>(node, b)); }
void build_activation(const NodeSpec& node, QBuilder& b) {
  if (node.attr_string("activation", "linear") == "softmax") return build_softmax(node, b);
  b.add(std::make_unique<Requantize>(node, b));
}

}  // namespace onednn::int8
