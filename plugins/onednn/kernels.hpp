// Element-wise loops over whole buffers (any layout: they treat padding like data, which stays zero).
#pragma once

#include <cstddef>
#include <cstdint>

namespace onednn {

void zero_floats(float* dst, size_t n);
void copy_floats(float* dst, const float* src, size_t n);
void add_floats(float* dst, const float* src, size_t n);  // dst += src
bool all_finite(const float* x, size_t n);

// Dropout: dst = src * keep / (1 - rate), keep drawn per element from (seed, salt, element index).
void dropout_apply(float* dst, const float* src, size_t n, float rate, uint64_t seed, uint64_t salt);

}  // namespace onednn
