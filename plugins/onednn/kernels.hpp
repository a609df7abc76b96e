// Element-wise loops over whole buffers (any layout: they treat padding like data, which stays zero).
#pragma once

#include "common.hpp"

#include <cstddef>
#include <cstdint>

namespace onednn {

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
void dropout_memory(const dnnl::memory& dst, const dnnl::memory& src, float rate, uint64_t seed, uint64_t salt);

}  // namespace onednn
