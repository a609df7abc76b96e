// The input gradient of a chunk of a valid 3x3 convolution (stride 1, float32) whose input is 4k + 1 pixels on a
// side, as Winograd on whole tiles plus a border of our own: the chunked convolution's backward-data where it pays.
//
// Why: oneDNN's Winograd (F(4x4, 3x3)) makes output in 4x4 tiles, and the input gradient is backward-data's output.
// The CNN's second convolution reads a 13x13 map: its backward-data computes 16x16 per channel and drops the rest,
// 0.62-0.65 ms a chunk of 16 against 0.37 for the forward's 11x11 (12x12 in tiles), on one Zen 4 core. It was over
// a third of the CNN's float32 training step. Here the top-left 12x12 of the gradient is a forward convolution
// (padding 1) of the output gradient, moved one pixel down and right in a zero-bordered buffer, with the kernel
// flipped and its channels swapped: whole tiles, 0.40 ms. The last row and column (25 of 169 pixels) are direct
// (0.06 ms), and the two copies 0.02 ms. (On the 2-vCPU Xeon oneDNN's reorders for those copies took 0.04 ms each
// and the border, one pixel at a time, 4 % of the float32 step: the copies are plain row copies now, and the border
// four pixels at a time along each line.) (Winograd's backward-data itself gives wrong values with the asymmetric
// padding that would crop it to 12x12 in oneDNN 2.6, so it is not used that way.)
#pragma once

#include "../common.hpp"

#include <ramjet/sdk/graph_ir.hpp>

#include <optional>

namespace onednn {

struct WinogradBorder {
  int64_t examples = 0, C = 0, F = 0, H = 0, W = 0;  // one chunk: input C x H x W, output F x (H-2) x (W-2)
  md padded;                                         // the output gradient with a zero border, F x (H-1) x (W-1)
  dnnl::convolution_forward::primitive_desc tiles;   // padded (*) flipped kernel -> the top-left (H-1) x (W-1)
};

// The primitives for one thread, where this applies: a float32 valid 3x3 convolution with stride and dilation 1,
// one group, H and W of 4k + 1 (k >= 1), C a multiple of 32 and F of 16, the input and output chunks laid out as
// aBcd16b (`src`, `dst`), AVX-512 for the border, and oneDNN's Winograd for the tiles. Nullopt elsewhere.
// `attr`: the primitives' (their scratchpad mode: the caller gives each lane its own).
std::optional<WinogradBorder> winograd_border(const ramjet::ir::ConvGeometry& g, const md& src, const md& dst,
                                              const dnnl::primitive_attr& attr, const dnnl::engine& engine);

// The kernels the two parts read, from the Keras kernel [3][3][C][F]: `flipped` [C][F][3][3] (oihw of the tiles'
// forward convolution, rotated half a turn), `taps` [3][3][F][C] (the border's).
void border_kernels(const float* keras, int64_t C, int64_t F, float* flipped, float* taps);

// The chunk's output gradient `dy` (aBcd16b, F x (H-2) x (W-2) per example) into the interior of `padded` (one
// pixel down and right; the border, zeroed once by the caller, is not written).
void border_fill(const WinogradBorder& b, const float* dy, float* padded);
// The tiles' output (aBcd16b, C x (H-1) x (W-1) per example) into the top-left of the chunk's input gradient `dx`
// (aBcd16b, C x H x W per example).
void border_place(const WinogradBorder& b, const float* tiles, float* dx);

// The floats border_backward_data needs in `lines`, zeroed once by the caller (it writes only what it reads back).
int64_t border_line_floats(const WinogradBorder& b);
// The last row and column of a chunk's input gradient, from its output gradient `dy` (aBcd16b, F x (H-2) x (W-2)
// per example) and `taps`; written into `dx` (aBcd16b, C x H x W per example), the rest of `dx` untouched.
void border_backward_data(const WinogradBorder& b, const float* dy, const float* taps, float* lines, float* dx);

}  // namespace onednn
