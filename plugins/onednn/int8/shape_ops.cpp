// flatten and reshape (views of the input's bytes in the host's nhwc/row-major order, as Keras flattens), and
// concat on any axis (copies, requantizing an input whose scale or zero point differs from the output's as
// TFLite's Concatenation does). In the host's order, joining axis k is joining rows: every input is [rows, its
// block], rows = N · the dims before k, and each input's block (its dims from k on) lands at its offset in the
// output's row.
#include "../layout.hpp"
#include "qlayer_util.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

namespace onednn::int8 {
namespace {

void build_reshape_like(const NodeSpec& node, QBuilder& b) {
  QValue& in = only_input(node, b);
  const Shape shape = node.reshape_target(in.shape);
  if (shape != node.shape)
    node.fail(RAMJET_ERR_INVALID_ARGUMENT, "cannot reshape " + shape_string(in.shape) + " to " + shape_string(node.shape));
  const dnnl::memory bytes = b.canonical(in);
  b.define(node.name, shape, in.quant, canonical_md(b.batch(), shape, dt::u8), bytes.get_data_handle());
}

class Concat : public QStep {
 public:
  Concat(const NodeSpec& node, QBuilder& b) {
    if (node.inputs.empty()) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "concat needs inputs");
    const ActivationQuant& out = output_quant(node, b);
    Shape shape = b.value(node.inputs[0]).shape;
    const auto rank = static_cast<int64_t>(shape.size());
    const int64_t axis = node.attr_int("axis", -1);
    if (rank == 0 || axis < -rank || axis >= rank)
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "attribute 'axis' (" + std::to_string(axis) + ") names no axis of " +
                                                 shape_string(shape));
    const auto k = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    shape[k] = 0;
    const Shape across = shape;  // every input's shape but the joined axis
    for (const std::string& name : node.inputs) {
      QValue& in = b.value(name);
      Shape others = in.shape;
      if (others.size() == across.size()) others[k] = 0;
      if (others != across) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "inputs differ in shape on an axis other than the joined one");
      Part part{b.canonical(in), product(in.shape) / product(Shape(in.shape.begin(), in.shape.begin() + k)), 0,
                in.quant.same_as(out), {}};
      // out = round(in · scale + bias) + zp_out, TFLite's float requantization, tabled for the 256 inputs.
      const float scale = in.quant.scale / out.scale, bias = -static_cast<float>(in.quant.zp_u8()) * scale;
      for (int q = 0; q < 256; ++q)
        part.requantized[static_cast<size_t>(q)] = static_cast<uint8_t>(
            std::clamp(std::round(static_cast<float>(q) * scale + bias) + static_cast<float>(out.zp_u8()), 0.0f, 255.0f));
      parts_.push_back(std::move(part));
      shape[k] += in.shape[k];
    }
    if (shape != node.shape) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "the output shape must be " + shape_string(shape));
    rows_ = b.batch() * product(Shape(shape.begin(), shape.begin() + k));
    width_ = product(shape) / product(Shape(shape.begin(), shape.begin() + k));
    int64_t offset = 0;
    for (Part& p : parts_) p.offset = offset, offset += p.width;
    dst_ = b.define(node.name, shape, out, canonical_md(b.batch(), shape, dt::u8)).mem;
  }

  void run(dnnl::stream&) override {
    auto* dst = static_cast<uint8_t*>(dst_.get_data_handle());
    for (const Part& p : parts_) {
      const auto* src = static_cast<const uint8_t*>(p.src.get_data_handle());
      const int64_t rows = rows_, width = width_;
#pragma omp parallel for schedule(static)
      for (int64_t r = 0; r < rows; ++r) {
        const uint8_t* in = src + r * p.width;
        uint8_t* out = dst + r * width + p.offset;
        if (p.copy) {
          std::memcpy(out, in, static_cast<size_t>(p.width));
          continue;
        }
        for (int64_t c = 0; c < p.width; ++c) out[c] = p.requantized[in[c]];
      }
    }
  }

 private:
  struct Part {
    dnnl::memory src;
    int64_t width, offset;
    bool copy;
    std::array<uint8_t, 256> requantized;  // by input value, when not a copy
  };
  std::vector<Part> parts_;
  int64_t rows_ = 0, width_ = 0;
  dnnl::memory dst_;
};

}  // namespace

void build_flatten(const NodeSpec& node, QBuilder& b) { build_reshape_like(node, b); }
void build_reshape(const NodeSpec& node, QBuilder& b) { build_reshape_like(node, b); }
void build_concat(const NodeSpec& node, QBuilder& b) { b.add(std::make_unique<Concat>(node, b)); }

}  // namespace onednn::int8
