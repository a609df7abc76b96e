// conv2d_transpose (TFLite's TRANSPOSE_CONV) on u8 activations and an s8 kernel with one scale or one per output
// channel. Each input pixel's C values times the kernel give kh·kw·F exact s32 products; the products are added
// into the output pixels they reach (output row iy·stride + ky − top), so a pixel reached by several taps sums them
// in s32 before any rounding, as TFLite does. The input zero point's share (zp·Σ_c w) leaves each product before it
// is added, which keeps border pixels (fewer taps) right. The epilogue is conv2d's: (acc + bias) · scale in f32,
// the fused relu/relu6 clamp, rounded to nearest even.
//
// The products are one matrix product for the whole batch: oneDNN's u8×s8→s32 matmul where it is exact (VNNI), a
// plain s32 loop elsewhere (exact_conv.hpp says why oneDNN's int8 kernels saturate without VNNI).
#include "../layout.hpp"
#include "exact_conv.hpp"  // onednn_int8_is_exact
#include "qlayer_util.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>

namespace onednn::int8 {
namespace {

class QConv2DTranspose : public QStep {
 public:
  QConv2DTranspose(const NodeSpec& node, QBuilder& b) : N_(b.batch()) {
    QValue& in = only_input(node, b);
    if (in.shape.size() != 3) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "conv2d_transpose needs an image [H, W, C] input");
    H_ = in.shape[0], W_ = in.shape[1], C_ = in.shape[2];
    F_ = node.attr_int("filters");
    const auto k = node.attr_ints("kernel", 2);
    const auto s = node.attr_ints("strides", 2, {1, 1});
    const auto pad = node.attr_ints("padding", 4, {0, 0, 0, 0});
    kh_ = k[0], kw_ = k[1], sh_ = s[0], sw_ = s[1], top_ = pad[0], left_ = pad[2];
    if (F_ < 1 || kh_ < 1 || kw_ < 1 || sh_ < 1 || sw_ < 1 || top_ < 0 || left_ < 0)
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "filters, kernel and strides must be >= 1, padding's top and left >= 0");
    OH_ = (H_ - 1) * sh_ + kh_ - pad[0] - pad[1];
    OW_ = (W_ - 1) * sw_ + kw_ - pad[2] - pad[3];
    check_output_shape(node, {OH_, OW_, F_});  // padding that leaves no output gives no graph's shape
    J_ = kh_ * kw_ * F_;
    checked_param(node, b, "kernel", true, {kh_, kw_, F_, C_}, true);
    checked_param(node, b, "bias", false, {F_}, false);
    kernel_ = node.param("kernel");
    if (node.params.count("bias")) bias_ = node.param("bias");

    const ActivationQuant& out = output_quant(node, b);
    scales_ = output_scales(node, b, in.quant, out, F_);
    zp_in_ = in.quant.zp_u8();
    zp_out_ = out.zp_u8();
    const ClampRange clamp = activation_range(node, out);
    lo_ = static_cast<float>(std::max(0, clamp.lo + 128));
    hi_ = static_cast<float>(std::min(255, clamp.hi + 128));

    src_ = b.canonical(in);
    dst_ = b.define(node.name, node.shape, out, canonical_md(N_, node.shape, dt::u8)).mem;
    products_.assign(static_cast<size_t>(N_ * H_ * W_ * J_), 0);
    threads_ = omp_get_max_threads();
    sums_.assign(static_cast<size_t>(threads_ * OH_ * OW_ * F_), 0);
    correction_.assign(static_cast<size_t>(J_), 0);
    bias_f_.assign(static_cast<size_t>(F_), 0.0f);
    if (onednn_int8_is_exact()) build_matmul(b);
  }

  void prepare(const QParamStore& params, dnnl::stream& stream) override {
    // The IR kernel [kh, kw, F, C] is, row-major, the matrix [J, C]: product j of a pixel is row j times its C values.
    const QParam& kernel = params.get(kernel_);
    for (int64_t j = 0; j < J_; ++j) {
      int32_t sum = 0;
      for (int64_t c = 0; c < C_; ++c) sum += kernel.s8[static_cast<size_t>(j * C_ + c)];
      correction_[static_cast<size_t>(j)] = zp_in_ * sum;
    }
    const int32_t* bias = bias_.empty() ? nullptr : params.get(bias_).s32.data();
    for (int64_t f = 0; f < F_; ++f)
      bias_f_[static_cast<size_t>(f)] =
          static_cast<float>(bias ? bias[f] : 0) + static_cast<float>(zp_out_) / scale(f);
    if (matmul_) {
      dnnl::memory plain(md({C_, J_}, dt::s8, tag::ba), weights_.get_engine(), const_cast<int8_t*>(kernel.s8.data()));
      dnnl::reorder(plain, weights_).execute(stream, plain, weights_);
    } else {
      wide_.resize(static_cast<size_t>(C_ * J_));  // [C][J], widened once so the loop multiplies s32 by s32
      for (int64_t j = 0; j < J_; ++j)
        for (int64_t c = 0; c < C_; ++c) wide_[static_cast<size_t>(c * J_ + j)] = kernel.s8[static_cast<size_t>(j * C_ + c)];
    }
  }

  void run(dnnl::stream& stream) override {
    if (matmul_) {
      matmul_.execute(stream, matmul_args_);
      stream.wait();
    } else {
      products_by_loop();
    }
    scatter_and_requantize();
  }

 private:
  float scale(int64_t f) const { return scales_.size() == 1 ? scales_[0] : scales_[static_cast<size_t>(f)]; }

  void build_matmul(QBuilder& b) {
    const int64_t M = N_ * H_ * W_;
    const md src({M, C_}, dt::u8, tag::ab), dst({M, J_}, dt::s32, tag::ab);
    const dnnl::matmul::primitive_desc pd({src, md({C_, J_}, dt::s8, tag::any), dst}, b.attr(), b.engine());
    matmul_ = dnnl::matmul(pd);
    weights_ = dnnl::memory(pd.weights_desc(), b.engine());
    matmul_args_ = {{DNNL_ARG_SRC, dnnl::memory(src, b.engine(), src_.get_data_handle())},
                    {DNNL_ARG_WEIGHTS, weights_},
                    {DNNL_ARG_DST, dnnl::memory(dst, b.engine(), products_.data())}};
    b.use_scratchpad(pd, matmul_args_);
  }

  void products_by_loop() {
    const auto* src = static_cast<const uint8_t*>(src_.get_data_handle());
    const int64_t M = N_ * H_ * W_, C = C_, J = J_;
    const int32_t* w = wide_.data();
    int32_t* products = products_.data();
#pragma omp parallel for schedule(static)
    for (int64_t m = 0; m < M; ++m) {
      int32_t* row = products + m * J;
      std::fill(row, row + J, 0);
      for (int64_t c = 0; c < C; ++c) {
        const int32_t x = src[m * C + c];
        if (x == 0) continue;
        const int32_t* wc = w + c * J;
        for (int64_t j = 0; j < J; ++j) row[j] += x * wc[j];
      }
    }
  }

  void scatter_and_requantize() {
    auto* dst = static_cast<uint8_t*>(dst_.get_data_handle());
    const int64_t N = N_, H = H_, W = W_, F = F_, J = J_, OH = OH_, OW = OW_, plane = OH_ * OW_ * F_;
    // No more threads than sums_ has images for, whatever the caller's OpenMP setting is now.
#pragma omp parallel for num_threads(threads_) schedule(static)
    for (int64_t n = 0; n < N; ++n) {
      int32_t* acc = sums_.data() + omp_get_thread_num() * plane;
      std::fill(acc, acc + plane, 0);
      for (int64_t iy = 0; iy < H; ++iy)
        for (int64_t ix = 0; ix < W; ++ix) {
          const int32_t* row = products_.data() + ((n * H + iy) * W + ix) * J;
          for (int64_t ky = 0; ky < kh_; ++ky) {
            const int64_t oy = iy * sh_ + ky - top_;
            if (oy < 0 || oy >= OH) continue;
            for (int64_t kx = 0; kx < kw_; ++kx) {
              const int64_t ox = ix * sw_ + kx - left_;
              if (ox < 0 || ox >= OW) continue;
              const int64_t j0 = (ky * kw_ + kx) * F;
              int32_t* out = acc + (oy * OW + ox) * F;
              for (int64_t f = 0; f < F; ++f) out[f] += row[j0 + f] - correction_[static_cast<size_t>(j0 + f)];
            }
          }
        }
      uint8_t* q = dst + n * plane;
      // Adding and taking away 1.5 · 2^23 rounds a float in [0, 255] to the nearest integer, ties to even (the
      // default rounding mode, as nearbyint), in a form the compiler vectorises; nearbyint is a libm call here.
      constexpr float kRound = 12582912.0f;
      for (int64_t p = 0; p < OH * OW; ++p)
        for (int64_t f = 0; f < F; ++f) {
          const float v = (static_cast<float>(acc[p * F + f]) + bias_f_[static_cast<size_t>(f)]) * scale(f);
          q[p * F + f] = static_cast<uint8_t>((std::clamp(v, lo_, hi_) + kRound) - kRound);
        }
    }
  }

  int threads_ = 1;
  int64_t N_, H_ = 0, W_ = 0, C_ = 0, F_ = 0, kh_ = 1, kw_ = 1, sh_ = 1, sw_ = 1, top_ = 0, left_ = 0, OH_ = 0,
                     OW_ = 0, J_ = 0;
  std::string kernel_, bias_;
  std::vector<float> scales_, bias_f_;
  int32_t zp_in_ = 0, zp_out_ = 0;
  float lo_ = 0, hi_ = 255;
  dnnl::memory src_, dst_, weights_;
  dnnl::primitive matmul_;
  Args matmul_args_;
  std::vector<int32_t> products_;    // [N·H·W][J]
  std::vector<int32_t> sums_;        // one output image of s32 sums per thread
  std::vector<int32_t> correction_;  // [J]: zp_in · Σ_c w
  std::vector<int32_t> wide_;        // the loop's kernel, [C][J]
};

}  // namespace

void build_conv2d_transpose(const NodeSpec& node, QBuilder& b) { b.add(std::make_unique<QConv2DTranspose>(node, b)); }

}  // namespace onednn::int8
