// max_pool and global_max_pool run oneDNN's u8 max pooling, or our loop for an unpadded pool of an nhwc input
// (exact either way: the output keeps the input's scale and zero point). avg_pool and global_avg_pool are loops
// over nhwc that round like TFLite's integer kernels (half away from zero), which oneDNN's averaging does not.
#include "../layout.hpp"
#include "fixed_point.hpp"
#include "qlayer_util.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace onednn::int8 {
namespace {

struct Window {
  int64_t kh, kw, sh, sw, pt, pb, pl, pr, oh, ow;
};

Window window_of(const NodeSpec& node, const Shape& in, bool global) {
  if (in.size() != 3) node.fail(RAMJET_ERR_INVALID_ARGUMENT, node.op + " needs an image [H, W, C] input");
  if (global) return {in[0], in[1], 1, 1, 0, 0, 0, 0, 1, 1};
  const auto k = node.attr_ints("pool", 2);
  const auto s = node.attr_ints("strides", 2, k);
  const auto p = node.attr_ints("padding", 4, {0, 0, 0, 0});
  Window w{k[0], k[1], s[0], s[1], p[0], p[1], p[2], p[3], 0, 0};
  if (w.kh < 1 || w.kw < 1 || w.sh < 1 || w.sw < 1 || *std::min_element(p.begin(), p.end()) < 0)
    node.fail(RAMJET_ERR_INVALID_ARGUMENT, "pool and strides must be >= 1, padding >= 0");
  w.oh = (in[0] + w.pt + w.pb - w.kh) / w.sh + 1;
  w.ow = (in[1] + w.pl + w.pr - w.kw) / w.sw + 1;
  check_output_shape(node, {w.oh, w.ow, in[2]});  // a window larger than the input gives no graph's shape
  return w;
}

// The sums over a window of `rows` x `cols` pixels (rows `row_bytes` apart, pixels `C` apart) of `cn` <=
// kChannelChunk channels, each position's channels added as one contiguous vector. Sum is uint16_t when no sum
// can pass 65535: twice the lanes of int32_t per vector. Integer sums, so the order changes nothing.
constexpr int64_t kChannelChunk = 64;

template <class Sum>
void window_sums(const uint8_t* corner, int64_t rows, int64_t cols, int64_t row_bytes, int64_t C, int64_t cn,
                 int32_t* out) {
  Sum sums[kChannelChunk] = {};
  for (int64_t y = 0; y < rows; ++y)
    for (int64_t x = 0; x < cols; ++x) {
      const uint8_t* __restrict in = corner + y * row_bytes + x * C;
#pragma omp simd
      for (int64_t c = 0; c < cn; ++c) sums[c] = static_cast<Sum>(sums[c] + in[c]);
    }
  for (int64_t c = 0; c < cn; ++c) out[c] = static_cast<int32_t>(sums[c]);
}

// Calls visit(n, oy, ox) for every output pixel of N images pooled by `w`, the pixels shared among the threads.
template <class Visit>
void for_each_output(int64_t N, const Window& w, const Visit& visit) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oy = 0; oy < w.oh; ++oy)
      for (int64_t ox = 0; ox < w.ow; ++ox) visit(n, oy, ox);
}

class MaxPool : public QStep {
 public:
  MaxPool(const NodeSpec& node, QBuilder& b, bool global) {
    QValue& in = only_input(node, b);
    const Window w = window_of(node, in.shape, global);
    if (global && node.shape != Shape{in.shape[2]})
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "the output shape must be [C]");
    const ActivationQuant& quant = same_quant(node, b, in);
    const int64_t N = b.batch(), C = in.shape[2];
    // The global pool writes nhwc {N, C, 1, 1}: the same bytes as its [C] output.
    const md dst = global ? md({N, C, 1, 1}, dt::u8, tag::nhwc) : md({N, C, w.oh, w.ow}, dt::u8, tag::any);
    const dnnl::pooling_forward::primitive_desc pd(
        {dnnl::prop_kind::forward_inference, dnnl::algorithm::pooling_max, in.mem.get_desc(), dst, {w.sh, w.sw},
         {w.kh, w.kw}, {w.pt, w.pl}, {w.pb, w.pr}},
        b.attr(), b.engine());
    fwd_ = dnnl::pooling_forward(pd);
    if (global) {
      dst_ = dnnl::memory(pd.dst_desc(), b.engine());
      b.define(node.name, node.shape, quant, canonical_md(N, node.shape, dt::u8), dst_.get_data_handle());
    } else {
      dst_ = b.define(node.name, node.shape, quant, pd.dst_desc()).mem;
    }
    args_ = {{DNNL_ARG_SRC, in.mem}, {DNNL_ARG_DST, dst_}};
    b.use_scratchpad(pd, args_);
  }
  void run(dnnl::stream& stream) override { fwd_.execute(stream, args_); }

 private:
  dnnl::primitive fwd_;
  dnnl::memory dst_;
  Args args_;
};

// An unpadded max pool over an nhwc input: u8 maxima of whole pixel rows, which the compiler vectorises (16 bytes
// an instruction even at the baseline ISA). On the CNN's 256x11x11x64 map it took 0.09 ms where oneDNN's u8
// pooling took 0.24 ms (2 threads); the result is the same, a maximum being exact.
class MaxPoolNhwc : public QStep {
 public:
  static bool fits(const Window& w, const QValue& in, int64_t batch) {
    return w.pt == 0 && w.pb == 0 && w.pl == 0 && w.pr == 0 && in.mem.get_desc() == canonical_md(batch, in.shape, dt::u8);
  }
  MaxPoolNhwc(const NodeSpec& node, QBuilder& b, QValue& in, const Window& w)
      : w_(w), N_(b.batch()), H_(in.shape[0]), W_(in.shape[1]), C_(in.shape[2]) {
    src_ = in.mem;
    dst_ = b.define(node.name, node.shape, same_quant(node, b, in), canonical_md(N_, node.shape, dt::u8)).mem;
  }

  void run(dnnl::stream&) override {
    const auto* src = static_cast<const uint8_t*>(src_.get_data_handle());
    auto* dst = static_cast<uint8_t*>(dst_.get_data_handle());
    const Window w = w_;
    const int64_t H = H_, W = W_, C = C_;
    for_each_output(N_, w, [&](int64_t n, int64_t oy, int64_t ox) {
      uint8_t* __restrict out = dst + ((n * w.oh + oy) * w.ow + ox) * C;
      const uint8_t* __restrict corner = src + ((n * H + oy * w.sh) * W + ox * w.sw) * C;
      std::memcpy(out, corner, static_cast<size_t>(C));
      for (int64_t ky = 0; ky < w.kh; ++ky)
        for (int64_t kx = 0; kx < w.kw; ++kx) {
          const uint8_t* __restrict in = corner + (ky * W + kx) * C;
#pragma omp simd
          for (int64_t c = 0; c < C; ++c) out[c] = std::max(out[c], in[c]);
        }
    });
  }

 private:
  Window w_;
  int64_t N_, H_, W_, C_;
  dnnl::memory src_, dst_;
};

// TFLite's AveragePool (padding excluded from the count) on the int8 values, or its Mean over H and W for the
// global pool (zero points removed first, scales may differ).
class AvgPool : public QStep {
 public:
  AvgPool(const NodeSpec& node, QBuilder& b, bool global) : global_(global) {
    QValue& in = only_input(node, b);
    w_ = window_of(node, in.shape, global);
    if (global && node.shape != Shape{in.shape[2]})
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "the output shape must be [C]");
    const ActivationQuant& out = global ? output_quant(node, b) : same_quant(node, b, in);
    N_ = b.batch(), H_ = in.shape[0], W_ = in.shape[1], C_ = in.shape[2];
    zp_in_ = in.quant.zp_u8();
    zp_out_ = out.zp_u8();
    rescale_ = quantize_multiplier(static_cast<double>(in.quant.scale) / out.scale);
    src_ = b.canonical(in);
    dst_ = b.define(node.name, node.shape, out, canonical_md(N_, node.shape, dt::u8)).mem;
    // A global pool's count is the same for every output, so its mean is a function of the sum alone: one table
    // lookup per channel instead of a fixed-point multiply and a division (those took 0.2 ms of a MobileNet's
    // 9 ms int8 batch, more than the sums).
    const int64_t count = H_ * W_;
    if (global_ && count <= kTabledCount)
      for (int32_t sum = 0; sum <= static_cast<int32_t>(255 * count); ++sum)
        means_.push_back(mean(sum, static_cast<int32_t>(count)));
  }

  void run(dnnl::stream&) override {
    const auto* src = static_cast<const uint8_t*>(src_.get_data_handle());
    auto* dst = static_cast<uint8_t*>(dst_.get_data_handle());
    const Window w = w_;
    const int64_t H = H_, W = W_, C = C_;
    for_each_output(N_, w, [&](int64_t n, int64_t oy, int64_t ox) {
      const int64_t y0 = std::max<int64_t>(oy * w.sh - w.pt, 0), y1 = std::min(oy * w.sh - w.pt + w.kh, H);
      const int64_t x0 = std::max<int64_t>(ox * w.sw - w.pl, 0), x1 = std::min(ox * w.sw - w.pl + w.kw, W);
      const int32_t count = static_cast<int32_t>((y1 - y0) * (x1 - x0));
      uint8_t* out = dst + ((n * w.oh + oy) * w.ow + ox) * C;
      // Channels a chunk at a time: a loop per channel over the window read one byte per position and did not
      // vectorise (1.5 ms of a MobileNet's 12 ms batch in its global pool).
      int32_t sums[kChannelChunk];
      for (int64_t c0 = 0; c0 < C; c0 += kChannelChunk) {
        const int64_t cn = std::min(kChannelChunk, C - c0);
        const uint8_t* corner = src + ((n * H + y0) * W + x0) * C + c0;
        if (count <= 65535 / 255)
          window_sums<uint16_t>(corner, y1 - y0, x1 - x0, W * C, C, cn, sums);
        else
          window_sums<int32_t>(corner, y1 - y0, x1 - x0, W * C, C, cn, sums);
        if (!means_.empty())
          for (int64_t c = 0; c < cn; ++c) out[c0 + c] = means_[static_cast<size_t>(sums[c])];
        else
          for (int64_t c = 0; c < cn; ++c) out[c0 + c] = global_ ? mean(sums[c], count) : average(sums[c], count);
      }
    });
  }

 private:
  // AveragePool sums the int8 values themselves (q_u8 - 128).
  static uint8_t average(int32_t sum_u8, int32_t count) {
    const int32_t q = divide_rounding_away(sum_u8 - 128 * count, count);
    return static_cast<uint8_t>(std::clamp(q, -128, 127) + 128);
  }
  uint8_t mean(int32_t sum_u8, int32_t count) const {
    const int32_t centred = multiply(sum_u8 - zp_in_ * count, rescale_);
    return static_cast<uint8_t>(std::clamp(divide_rounding_away(centred, count) + zp_out_, 0, 255));
  }

  static constexpr int64_t kTabledCount = 4096;  // a 1 MiB table at most (64 x 64 positions)

  bool global_;
  Window w_{};
  int64_t N_ = 0, H_ = 0, W_ = 0, C_ = 0;
  int32_t zp_in_ = 0, zp_out_ = 0;
  QuantizedMultiplier rescale_;
  std::vector<uint8_t> means_;  // the global pool's output for each possible u8 sum, when the count is small
  dnnl::memory src_, dst_;
};

}  // namespace

void build_max_pool(const NodeSpec& node, QBuilder& b) {
  QValue& in = only_input(node, b);
  const Window w = window_of(node, in.shape, false);
  if (MaxPoolNhwc::fits(w, in, b.batch())) return b.add(std::make_unique<MaxPoolNhwc>(node, b, in, w));
  b.add(std::make_unique<MaxPool>(node, b, false));
}
void build_global_max_pool(const NodeSpec& node, QBuilder& b) { b.add(std::make_unique<MaxPool>(node, b, true)); }
void build_avg_pool(const NodeSpec& node, QBuilder& b) { b.add(std::make_unique<AvgPool>(node, b, false)); }
void build_global_avg_pool(const NodeSpec& node, QBuilder& b) { b.add(std::make_unique<AvgPool>(node, b, true)); }

}  // namespace onednn::int8
