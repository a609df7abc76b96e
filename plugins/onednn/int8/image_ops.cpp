// The image-to-image ops that keep their input's scale and zero point (docs/quantized-graph.md): zero_padding2d
// (TFLite's PAD, filled with the zero point, which is real 0), cropping2d (SLICE) and depth_to_space move bytes
// with oneDNN u8 reorders over nhwc views, as their float layers do; resize samples as TFLite's int8 kernels with
// half-pixel centres (RESIZE_NEAREST_NEIGHBOR's float index, RESIZE_BILINEAR's 10-bit fixed-point weights), so the
// backend gives what LiteRT gives for the exported file.
#include "../layout.hpp"
#include "qlayer_util.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace onednn::int8 {
namespace {

QValue& image_input(const NodeSpec& node, QBuilder& b) {
  QValue& in = only_input(node, b);
  if (in.shape.size() != 3) node.fail(RAMJET_ERR_INVALID_ARGUMENT, node.op + " needs an image [H, W, C] input");
  return in;
}

// A u8 reorder between two views of nhwc buffers; the output first filled with `fill` when it has one.
class MoveStep : public QStep {
 public:
  MoveStep(const dnnl::memory& from, const dnnl::memory& to, const dnnl::memory& whole_output, int fill)
      : reorder_(from, to), from_(from), to_(to), whole_(whole_output), fill_(fill) {}
  void run(dnnl::stream& stream) override {
    if (fill_ >= 0) std::memset(whole_.get_data_handle(), fill_, whole_.get_desc().get_size());
    reorder_.execute(stream, from_, to_);
  }

 private:
  dnnl::reorder reorder_;
  dnnl::memory from_, to_, whole_;
  int fill_;
};

void build_move(QBuilder& b, const md& from_view, const dnnl::memory& in_bytes,
                const md& to_view, const dnnl::memory& out_bytes, int fill) {
  const dnnl::memory from(from_view, b.engine(), in_bytes.get_data_handle());
  const dnnl::memory to(to_view, b.engine(), out_bytes.get_data_handle());
  b.add(std::make_unique<MoveStep>(from, to, out_bytes, fill));
}

std::vector<int64_t> sides(const NodeSpec& node, const char* key) {
  const auto v = node.attr_ints(key, 4);
  for (int64_t x : v)
    if (x < 0) node.fail(RAMJET_ERR_INVALID_ARGUMENT, std::string("attribute '") + key + "' must not be negative");
  return v;
}

// Nearest: TFLite's index, floor((o + 0.5) · in / out) in float, kept inside the image.
std::vector<int64_t> nearest_index(int64_t in, int64_t out) {
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  std::vector<int64_t> index(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o)
    index[static_cast<size_t>(o)] =
        std::clamp<int64_t>(static_cast<int64_t>(std::floor((static_cast<float>(o) + 0.5f) * scale)), 0, in - 1);
  return index;
}

// Bilinear: TFLite's integer sampling. Position (o + 0.5) · in / out − 0.5 in units of 1/1024 (the scale itself
// rounded to 1/1024), the two taps it falls between, and their weights (summing to 1024; both taps are pixel 0 with
// weights 1024 + d and −d before the first centre, as TFLite has it).
struct Taps {
  int64_t lo, hi;
  int32_t w_lo, w_hi;
};
std::vector<Taps> bilinear_taps(int64_t in, int64_t out) {
  const int64_t scale_10 = ((int64_t{1} << 10) * in + out / 2) / out;
  std::vector<Taps> taps(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    const int64_t pos = o * scale_10 + scale_10 / 2 - (1 << 9);
    const int64_t lo = std::max<int64_t>(pos / 1024, 0);  // C++ division truncates, as TFLite's does
    const int64_t hi = std::min<int64_t>((pos + 1023) / 1024, in - 1);
    const auto frac = static_cast<int32_t>(pos - 1024 * lo);
    taps[static_cast<size_t>(o)] = {lo, hi, 1024 - frac, frac};
  }
  return taps;
}

class Resize : public QStep {
 public:
  Resize(const NodeSpec& node, QBuilder& b) : N_(b.batch()) {
    QValue& in = image_input(node, b);
    const ActivationQuant& out = same_quant(node, b, in);
    H_ = in.shape[0], W_ = in.shape[1], C_ = in.shape[2];
    OH_ = node.attr_int("height"), OW_ = node.attr_int("width");
    if (OH_ < 1 || OW_ < 1) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "height and width must be >= 1");
    check_output_shape(node, {OH_, OW_, C_});
    const std::string how = node.attr_string("interpolation", "bilinear");
    if (how == "nearest") {
      rows_ = nearest_index(H_, OH_), cols_ = nearest_index(W_, OW_);
    } else if (how == "bilinear") {
      bilinear_ = true;
      row_taps_ = bilinear_taps(H_, OH_), col_taps_ = bilinear_taps(W_, OW_);
    } else {
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "interpolation must be \"nearest\" or \"bilinear\", got '" + how + "'");
    }
    src_ = b.canonical(in);
    dst_ = b.define(node.name, node.shape, out, canonical_md(N_, node.shape, dt::u8)).mem;
  }

  void run(dnnl::stream&) override {
    const auto* src = static_cast<const uint8_t*>(src_.get_data_handle());
    auto* dst = static_cast<uint8_t*>(dst_.get_data_handle());
    const int64_t N = N_, OH = OH_, OW = OW_, C = C_, row = W_ * C_, image = H_ * W_ * C_;
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t oy = 0; oy < OH; ++oy) {
        const uint8_t* in = src + n * image;
        uint8_t* out = dst + ((n * OH + oy) * OW) * C;
        if (!bilinear_) {
          const uint8_t* source_row = in + rows_[static_cast<size_t>(oy)] * row;
          for (int64_t ox = 0; ox < OW; ++ox, out += C)
            std::memcpy(out, source_row + cols_[static_cast<size_t>(ox)] * C, static_cast<size_t>(C));
          continue;
        }
        for (int64_t ox = 0; ox < OW; ++ox, out += C) {
          const Taps& y = row_taps_[static_cast<size_t>(oy)];
          const Taps& x = col_taps_[static_cast<size_t>(ox)];
          const uint8_t* p00 = in + y.lo * row + x.lo * C;
          const uint8_t* p01 = in + y.lo * row + x.hi * C;
          const uint8_t* p10 = in + y.hi * row + x.lo * C;
          const uint8_t* p11 = in + y.hi * row + x.hi * C;
          const int64_t w00 = int64_t{y.w_lo} * x.w_lo, w01 = int64_t{y.w_lo} * x.w_hi;
          const int64_t w10 = int64_t{y.w_hi} * x.w_lo, w11 = int64_t{y.w_hi} * x.w_hi;
          for (int64_t c = 0; c < C; ++c) {
            // On the int8 values (u8 − 128): TFLite rounds half away from zero in that domain.
            const int64_t sum = (p00[c] - 128) * w00 + (p01[c] - 128) * w01 + (p10[c] - 128) * w10 + (p11[c] - 128) * w11;
            const int64_t q = (sum + (sum > 0 ? (1 << 19) : -(1 << 19))) / (1 << 20);
            out[c] = static_cast<uint8_t>(std::clamp<int64_t>(q, -128, 127) + 128);
          }
        }
      }
  }

 private:
  int64_t N_, H_ = 0, W_ = 0, C_ = 0, OH_ = 0, OW_ = 0;
  bool bilinear_ = false;
  std::vector<int64_t> rows_, cols_;
  std::vector<Taps> row_taps_, col_taps_;
  dnnl::memory src_, dst_;
};

}  // namespace

void build_zero_padding2d(const NodeSpec& node, QBuilder& b) {
  QValue& in = image_input(node, b);
  const auto p = sides(node, "padding");
  const Shape shape{in.shape[0] + p[0] + p[1], in.shape[1] + p[2] + p[3], in.shape[2]};
  check_output_shape(node, shape);
  const ActivationQuant quant = same_quant(node, b, in);
  const dnnl::memory src = b.canonical(in);
  const md out_md = canonical_md(b.batch(), shape, dt::u8);
  const dnnl::memory dst = b.define(node.name, shape, quant, out_md).mem;
  // Logical dims {N, C, H, W}: the interior starts at row `top`, column `left`.
  const md interior = out_md.submemory_desc(batch_dims(b.batch(), in.shape), {0, 0, p[0], p[2]});
  build_move(b, src.get_desc(), src, interior, dst, quant.zp_u8());
}

void build_cropping2d(const NodeSpec& node, QBuilder& b) {
  QValue& in = image_input(node, b);
  const auto c = sides(node, "cropping");
  if (c[0] + c[1] >= in.shape[0] || c[2] + c[3] >= in.shape[1])
    node.fail(RAMJET_ERR_INVALID_ARGUMENT, "attribute 'cropping' removes the whole input " + shape_string(in.shape));
  const Shape shape{in.shape[0] - c[0] - c[1], in.shape[1] - c[2] - c[3], in.shape[2]};
  check_output_shape(node, shape);
  const dnnl::memory src = b.canonical(in);
  const md kept = src.get_desc().submemory_desc(batch_dims(b.batch(), shape), {0, 0, c[0], c[2]});
  const dnnl::memory dst = b.define(node.name, shape, same_quant(node, b, in), canonical_md(b.batch(), shape, dt::u8)).mem;
  build_move(b, kept, src, dst.get_desc(), dst, -1);
}

// tf.nn.depth_to_space (DCR): channel (i·bs + j)·C' + c of pixel (h, w) goes to pixel (h·bs + i, w·bs + j), channel
// c. The nhwc output is, byte for byte, the row-major [N, H, bs, W, bs, C']; the input is read in that order.
void build_depth_to_space(const NodeSpec& node, QBuilder& b) {
  QValue& in = image_input(node, b);
  const int64_t bs = node.attr_int("block_size");
  const int64_t H = in.shape[0], W = in.shape[1], C = in.shape[2], N = b.batch();
  if (bs < 2 || C % (bs * bs) != 0)
    node.fail(RAMJET_ERR_INVALID_ARGUMENT, "attribute 'block_size' must be at least 2, its square dividing the " +
                                               std::to_string(C) + " channels");
  const int64_t Co = C / (bs * bs);
  const Shape shape{H * bs, W * bs, Co};
  check_output_shape(node, shape);
  const dnnl::memory src = b.canonical(in);
  const dnnl::memory dst = b.define(node.name, shape, same_quant(node, b, in), canonical_md(N, shape, dt::u8)).mem;
  const dnnl::memory::dims dims{N, H, bs, W, bs, Co};
  const md in_as_out(dims, dt::u8, dnnl::memory::dims{H * W * C, W * C, bs * Co, C, Co, 1});
  build_move(b, in_as_out, src, md(dims, dt::u8, row_major_strides(dims)), dst, -1);
}

void build_resize(const NodeSpec& node, QBuilder& b) { b.add(std::make_unique<Resize>(node, b)); }

}  // namespace onednn::int8
