// The small elementwise kernels the backend needs between the library calls: dtype conversions (float32 master
// weights to their float16 compute copies, float16 gradients back), sums (residual adds, a value read by several
// layers collecting its gradient), the multiply and subtract layers, and the float32 accumulation of a parameter's
// gradient. All enqueue on `stream`.
#pragma once

#include <library_types.h>  // cudaDataType_t
#include <cuda_runtime_api.h>

#include <cstdint>

namespace cuda_plugin {

// dst (float16) = src (float32), n elements.
void to_half(const float* src, void* dst, int64_t n, cudaStream_t stream);
// dst (float32) = src (float32 or float16 as `dtype`); with `add`, dst += src.
void to_float(const void* src, float* dst, int64_t n, cudaDataType_t dtype, bool add, cudaStream_t stream);
// y = a + b, all of `dtype`.
void add(const void* a, const void* b, void* y, int64_t n, cudaDataType_t dtype, cudaStream_t stream);
// y = a · b, all of `dtype`.
void multiply(const void* a, const void* b, void* y, int64_t n, cudaDataType_t dtype, cudaStream_t stream);
// y = a − b, all of `dtype`; with b null, y = −a.
void subtract(const void* a, const void* b, void* y, int64_t n, cudaDataType_t dtype, cudaStream_t stream);
// y [..., channels] += bias [channels], both of `dtype`; n is y's element count.
void add_channel_bias(void* y, const void* bias, int64_t n, int64_t channels, cudaDataType_t dtype,
                      cudaStream_t stream);
// dst += src, both of `dtype`.
void add_into(void* dst, const void* src, int64_t n, cudaDataType_t dtype, cudaStream_t stream);

// A conv2d kernel between Keras's HWIO [kh, kw, in, out] (float32, what the host and the optimizer see) and cuDNN's
// NHWC filter [out, kh, kw, in] in the compute dtype: the compute copy, and the gradient back (added with `add`).
struct FilterShape {
  int64_t kh, kw, in, out;
  int64_t count() const { return kh * kw * in * out; }
};
void filter_from_keras(const float* hwio, void* ohwi, const FilterShape& s, cudaDataType_t dtype, cudaStream_t stream);
void filter_gradient_to_keras(const void* ohwi, float* hwio, const FilterShape& s, cudaDataType_t dtype, bool add,
                              cudaStream_t stream);

// An NHWC image with zeros around it, as a convolution with uneven ("same" at stride 2, or an even kernel) padding
// reads it (cuDNN pads both sides alike): y [n, h + top + bottom, w + left + right, c]; and the gradient back, the
// padded gradient's interior.
struct PadShape {
  int64_t n, h, w, c, top, bottom, left, right;
};
void pad_image(const void* x, void* y, const PadShape& s, cudaDataType_t dtype, cudaStream_t stream);
void crop_image(const void* padded, void* x, const PadShape& s, cudaDataType_t dtype, cudaStream_t stream);

inline size_t element_bytes(cudaDataType_t dtype) { return dtype == CUDA_R_16F ? 2 : 4; }

}  // namespace cuda_plugin
