#include "winograd_border.hpp"

#include <algorithm>
#include <cstring>
#include <string>

namespace onednn {
namespace {

// Sixteen channels of one pixel: one AVX-512 register in the functions built for it.
typedef float V16 __attribute__((vector_size(64), aligned(4)));

__attribute__((target("avx512f"), always_inline)) inline V16 border_load16(const float* p) {
  V16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

constexpr int64_t kLinePixels = 4;  // border pixels computed together: each weight vector loaded serves four

// One line of the border (the last row or the last column) of one example's input gradient. Along the line only
// one row (or column) of taps reaches the output, so pixel k of the line is a 1-D convolution of one output line:
// sum over t = 0..2 and f of line[f][k - t + 2] * taps_t[f][c], where `line` holds the output gradient's values
// along it with two zeros before and enough after (a pixel whose tap falls off the output reads a zero). 32
// channels at a time, four pixels at a time: eight sums in flight, each weight vector loaded once for four pixels.
// Pixel k's 32 channels go to dx + k * step and, the second 16, dx + k * step + half.
__attribute__((target("avx512f"))) void border_line(const float* line, int64_t stride, int64_t count,
                                                    const float* const taps[3], int64_t C, int64_t F, float* dx,
                                                    int64_t step, int64_t half) {
  for (int64_t cb = 0; cb < C / 32; ++cb)
    for (int64_t k0 = 0; k0 < count; k0 += kLinePixels) {
      V16 low[kLinePixels] = {}, high[kLinePixels] = {};
      for (int64_t f = 0; f < F; ++f) {
        const float* values = line + f * stride + k0 + 2;  // values[k - t]: pixel k0 + k, tap t
#pragma GCC unroll 3
        for (int t = 0; t < 3; ++t) {
          const V16 w0 = border_load16(taps[t] + f * C + cb * 32), w1 = border_load16(taps[t] + f * C + cb * 32 + 16);
#pragma GCC unroll 4
          for (int64_t k = 0; k < kLinePixels; ++k) {
            low[k] += values[k - t] * w0;
            high[k] += values[k - t] * w1;
          }
        }
      }
      for (int64_t k = 0; k < kLinePixels && k0 + k < count; ++k) {
        float* out = dx + (k0 + k) * step + 2 * cb * half;
        std::memcpy(out, &low[k], sizeof low[k]);
        std::memcpy(out + half, &high[k], sizeof high[k]);
      }
    }
}

// The floats between two output lines in border_backward_data's `lines`: the longer side, the two zeros before
// and room for the last group of pixels after.
int64_t border_line_stride(const WinogradBorder& b) { return std::max(b.W, b.H) + 2 + kLinePixels; }

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
    const md corner_dense({M, g.C, g.H - 1, g.W - 1}, dt::f32, tag::aBcd16b);
    b.tiles = dnnl::convolution_forward::primitive_desc(
        {dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_winograd, b.padded,
         md({g.C, g.F, 3, 3}, dt::f32, tag::any), md(), corner_dense, {1, 1}, {1, 1}, {1, 1}},
        attr, engine);
    if (std::string(b.tiles.impl_info_str()).find("wino") == std::string::npos ||
        b.tiles.src_desc() != b.padded || b.tiles.dst_desc() != corner_dense)
      return std::nullopt;
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

int64_t border_line_floats(const WinogradBorder& b) { return 2 * b.F * border_line_stride(b); }

void border_backward_data(const WinogradBorder& b, const float* dy, const float* taps, float* lines, float* dx) {
  const int64_t C = b.C, F = b.F, H = b.H, W = b.W, OH = H - 2, OW = W - 2;
  const int64_t in = C * H * W, out = F * OH * OW;
  const int64_t stride = border_line_stride(b);
  float* row = lines;
  float* column = lines + F * stride;
  const float* row_taps[3] = {taps + (2 * 3 + 0) * F * C, taps + (2 * 3 + 1) * F * C, taps + (2 * 3 + 2) * F * C};
  const float* column_taps[3] = {taps + (0 * 3 + 2) * F * C, taps + (1 * 3 + 2) * F * C, taps + (2 * 3 + 2) * F * C};
  for (int64_t n = 0; n < b.examples; ++n) {
    const float* g = dy + n * out;
    for (int64_t f = 0; f < F; ++f) {
      const float* plane = g + (f / 16 * OH * OW) * 16 + f % 16;
      for (int64_t x = 0; x < OW; ++x) row[f * stride + x + 2] = plane[((OH - 1) * OW + x) * 16];
      for (int64_t y = 0; y < OH; ++y) column[f * stride + y + 2] = plane[(y * OW + OW - 1) * 16];
    }
    float* d = dx + n * in;
    // The last row, W pixels (the corner included), then the last column above it, H - 1 pixels.
    border_line(row, stride, W, row_taps, C, F, d + (H - 1) * W * 16, 16, H * W * 16);
    border_line(column, stride, H - 1, column_taps, C, F, d + (W - 1) * 16, W * 16, H * W * 16);
  }
}

void border_fill(const WinogradBorder& b, const float* dy, float* padded) {
  const int64_t OH = b.H - 2, OW = b.W - 2, blocks = b.examples * b.F / 16;
  for (int64_t i = 0; i < blocks; ++i)
    for (int64_t y = 0; y < OH; ++y)
      std::memcpy(padded + ((i * (b.H - 1) + y + 1) * (b.W - 1) + 1) * 16, dy + (i * OH + y) * OW * 16,
                  static_cast<size_t>(OW * 16) * sizeof(float));
}

void border_place(const WinogradBorder& b, const float* tiles, float* dx) {
  const int64_t blocks = b.examples * b.C / 16;
  for (int64_t i = 0; i < blocks; ++i)
    for (int64_t y = 0; y + 1 < b.H; ++y)
      std::memcpy(dx + (i * b.H + y) * b.W * 16, tiles + (i * (b.H - 1) + y) * (b.W - 1) * 16,
                  static_cast<size_t>((b.W - 1) * 16) * sizeof(float));
}

}  // namespace onednn
