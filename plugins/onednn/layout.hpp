// How graph tensors map onto oneDNN memory descriptors.
//
// A batch of rank-3 values (H, W, C) is a 4-D oneDNN tensor with logical dims {N, C, H, W}; its canonical layout is
// nhwc, byte for byte the [N, H, W, C] C-contiguous tensor the host exchanges. Every other rank r becomes dims
// {N, s0, .., s(r-1)} in row-major order. Primitives may keep values in blocked layouts between them; only the
// boundaries (host tensors, flatten/reshape, losses) see the canonical one.
#pragma once

#include "common.hpp"

namespace onednn {

inline bool is_image(const Shape& shape) { return shape.size() == 3; }

// Logical oneDNN dims of a batch of `n` values of per-example `shape`.
dnnl::memory::dims batch_dims(int64_t n, const Shape& shape);
// The host's layout of that batch: nhwc for images, row-major otherwise.
md canonical_md(int64_t n, const Shape& shape, dt type = dt::f32);
// The same dims with format_tag::any, for primitives to choose.
md any_md(int64_t n, const Shape& shape, dt type = dt::f32);
// oneDNN axis of the last IR axis (channels for images).
int last_axis(const Shape& shape);
// `desc` in another data type, same dims and layout (a layer computing in `type` reads its input through it).
md with_type(const md& desc, dt type);
// Row-major descriptor of `shape` (no batch): how parameters are stored, in Keras's layouts.
md row_major_md(const Shape& shape, dt type = dt::f32);
// A conv2d kernel kept in the IR's HWIO layout ([kh, kw, C/G, F], output channel o = g * (F / G) + o_in_group),
// described in oneDNN's weight dims ({F, C, kh, kw}, or {G, F/G, C/G, kh, kw} grouped) by strides alone: no copy.
md hwio_kernel_md(int64_t kh, int64_t kw, int64_t C, int64_t F, int64_t G, dt type);
// Whether two descriptors lay out the same elements in the same bytes (plain layouts whose axes, ignoring those of
// extent 1, walk memory in the same order): a [N, T, C] sequence and the {N, C, 1, T} nhwc image it also is.
bool same_bytes(const md& a, const md& b);
// Two descriptors of the same dims whose every axis has the same stride in both, with no gaps, in any data types:
// copying or converting one to the other is one pass over a flat run of values.
bool same_order(const md& a, const md& b);
// Row-major strides of `dims`.
dnnl::memory::dims row_major_strides(const dnnl::memory::dims& dims);

}  // namespace onednn
