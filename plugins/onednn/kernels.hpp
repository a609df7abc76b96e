// Element-wise loops over whole buffers (any layout: they treat padding like data, which stays zero).
#pragma once

#include "common.hpp"

#include <bit>
#include <cstddef>
#include <cstdint>

namespace onednn {

// bf16 is the top half of a float32: widening is a shift; narrowing rounds to nearest even and keeps NaNs NaN.
inline float widen(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }
inline uint16_t narrow(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

// Reads and writes one element of a compute-type buffer (float32 or bf16) as a float, for the loops of layers
// oneDNN has no primitive for.
struct Elements {
  void* data;
  bool bf16;
  explicit Elements(const dnnl::memory& m)
      : data(m.get_data_handle()), bf16(m.get_desc().data_type() == dnnl::memory::data_type::bf16) {}
  float get(int64_t i) const { return bf16 ? widen(static_cast<const uint16_t*>(data)[i]) : static_cast<const float*>(data)[i]; }
  void set(int64_t i, float v) const {
    if (bf16) static_cast<uint16_t*>(data)[i] = narrow(v);
    else static_cast<float*>(data)[i] = v;
  }
};

void zero_floats(float* dst, size_t n);
void copy_floats(float* dst, const float* src, size_t n);
void add_floats(float* dst, const float* src, size_t n);  // dst += src
bool all_finite(const float* x, size_t n);

// Dropout: dst = src * keep / (1 - rate), keep drawn per element from (seed, salt, element index).
void dropout_apply(float* dst, const float* src, size_t n, float rate, uint64_t seed, uint64_t salt);

// The same on whole memory objects of either compute type, f32 or bf16 (bf16 adds and scales in f32 and rounds to
// nearest even); dst and src have one descriptor.
void zero_memory(const dnnl::memory& m);
void copy_memory(const dnnl::memory& dst, const dnnl::memory& src);
void add_memory(const dnnl::memory& dst, const dnnl::memory& src);  // dst += src
// dst = src (or dst += src) between float32 and bf16 buffers that hold the same elements in the same order.
void convert_memory(const dnnl::memory& dst, const dnnl::memory& src, bool accumulate);
void dropout_memory(const dnnl::memory& dst, const dnnl::memory& src, float rate, uint64_t seed, uint64_t salt);
// The gradient of y = clamp(sum of inputs, lo, hi) for each of the two inputs, in one pass: first = second = dy
// where lo < y < hi, else 0 (a NaN in y passes nothing). y, dy, first and second share one descriptor.
void clip_grad_to_both(const dnnl::memory& y, const dnnl::memory& dy, float lo, float hi, const dnnl::memory& first,
                       const dnnl::memory& second);

}  // namespace onednn
