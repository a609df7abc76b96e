#include "winograd_border.hpp"

#include <cstring>
#include <string>

namespace onednn {
namespace {

// Sixteen channels of one pixel: one AVX-512 register in the functions built for it.
typedef float V16 __attribute__((vector_size(64), aligned(4)));

__attribute__((target("avx512f"), always_inline)) inline V16 load16(const float* p) {
  V16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Input-gradient pixel (i, j) of one example: the sum over the taps that reach an output pixel. Thirty-two
// channels at a time, two sums each over alternate output channels, so that the additions do not wait on each other.
__attribute__((target("avx512f"))) void border_pixel(const WinogradBorder& b, const float* dy, const float* taps,
                                                     float* dx, int64_t i, int64_t j) {
  const int64_t C = b.C, F = b.F, H = b.H, W = b.W, OH = H - 2, OW = W - 2;
  for (int64_t cb = 0; cb < C / 32; ++cb) {
    V16 a0{}, a1{}, b0{}, b1{};
    for (int64_t kh = 0; kh < 3; ++kh) {
      const int64_t y = i - kh;
      if (y < 0 || y >= OH) continue;
      for (int64_t kw = 0; kw < 3; ++kw) {
        const int64_t x = j - kw;
        if (x < 0 || x >= OW) continue;
        const float* tap = taps + (kh * 3 + kw) * F * C + cb * 32;
        for (int64_t fb = 0; fb < F / 16; ++fb) {
          const float* d = dy + ((fb * OH + y) * OW + x) * 16;
          const float* w = tap + fb * 16 * C;
          for (int64_t f = 0; f < 16; f += 2) {
            a0 += d[f] * load16(w + f * C);
            b0 += d[f] * load16(w + f * C + 16);
            a1 += d[f + 1] * load16(w + (f + 1) * C);
            b1 += d[f + 1] * load16(w + (f + 1) * C + 16);
          }
        }
      }
    }
    const V16 low = a0 + a1, high = b0 + b1;
    std::memcpy(dx + ((2 * cb * H + i) * W + j) * 16, &low, sizeof low);
    std::memcpy(dx + (((2 * cb + 1) * H + i) * W + j) * 16, &high, sizeof high);
  }
}

}  // namespace

std::optional<WinogradBorder> winograd_border(const ramjet::ir::ConvGeometry& g, const md& src, const md& dst,
                                              const dnnl::primitive_attr& attr, const dnnl::engine& engine) {
  if (!__builtin_cpu_supports("avx512f")) return std::nullopt;
  const std::vector<int64_t> three{3, 3}, one{1, 1}, none{0, 0, 0, 0};
  if (g.kernel != three || g.strides != one || g.dilation != one || g.padding != none || g.G != 1) return std::nullopt;
  if (g.H < 5 || g.W < 5 || (g.H - 1) % 4 != 0 || (g.W - 1) % 4 != 0 || g.C % 32 != 0 || g.F % 16 != 0)
    return std::nullopt;
  if (src.dims().size() != 4) return std::nullopt;
  WinogradBorder b;
  b.examples = src.dims()[0], b.C = g.C, b.F = g.F, b.H = g.H, b.W = g.W;
  const int64_t M = b.examples, OH = g.H - 2, OW = g.W - 2;
  if (src != md({M, g.C, g.H, g.W}, dt::f32, tag::aBcd16b) || dst != md({M, g.F, OH, OW}, dt::f32, tag::aBcd16b))
    return std::nullopt;
  try {
    b.padded = md({M, g.F, g.H - 1, g.W - 1}, dt::f32, tag::aBcd16b);
    b.padded_interior = b.padded.submemory_desc({M, g.F, OH, OW}, {0, 0, 1, 1});
    b.fill = dnnl::reorder::primitive_desc(engine, dst, engine, b.padded_interior, attr);
    const md corner_dense({M, g.C, g.H - 1, g.W - 1}, dt::f32, tag::aBcd16b);
    b.tiles = dnnl::convolution_forward::primitive_desc(
        {dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_winograd, b.padded,
         md({g.C, g.F, 3, 3}, dt::f32, tag::any), md(), corner_dense, {1, 1}, {1, 1}, {1, 1}},
        attr, engine);
    if (std::string(b.tiles.impl_info_str()).find("wino") == std::string::npos ||
        b.tiles.src_desc() != b.padded || b.tiles.dst_desc() != corner_dense)
      return std::nullopt;
    b.corner = src.submemory_desc({M, g.C, g.H - 1, g.W - 1}, {0, 0, 0, 0});
    b.place = dnnl::reorder::primitive_desc(engine, corner_dense, engine, b.corner, attr);
    return b;
  } catch (const dnnl::error&) {
    return std::nullopt;
  }
}

void border_kernels(const float* keras, int64_t C, int64_t F, float* flipped, float* taps) {
  for (int64_t kh = 0; kh < 3; ++kh)
    for (int64_t kw = 0; kw < 3; ++kw)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t f = 0; f < F; ++f) {
          const float w = keras[((kh * 3 + kw) * C + c) * F + f];
          flipped[((c * F + f) * 3 + (2 - kh)) * 3 + (2 - kw)] = w;
          taps[((kh * 3 + kw) * F + f) * C + c] = w;
        }
}

void border_backward_data(const WinogradBorder& b, const float* dy, const float* taps, float* dx) {
  const int64_t in = b.C * b.H * b.W, out = b.F * (b.H - 2) * (b.W - 2);
  for (int64_t n = 0; n < b.examples; ++n) {
    for (int64_t j = 0; j < b.W; ++j) border_pixel(b, dy + n * out, taps, dx + n * in, b.H - 1, j);
    for (int64_t i = 0; i + 1 < b.H; ++i) border_pixel(b, dy + n * out, taps, dx + n * in, i, b.W - 1);
  }
}

}  // namespace onednn
