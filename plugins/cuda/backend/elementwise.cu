#include "elementwise.hpp"

#include "cuda_check.hpp"
#include "float_access.cuh"
#include "grid.cuh"

#include <cuda_fp16.h>

namespace cuda_plugin {
namespace {

constexpr int kThreads = kGridThreads;

unsigned blocks_for(int64_t n) { return grid_blocks(n); }

__global__ void to_half_kernel(const float* src, __half* dst, int64_t n) {
  RAMJET_GRID_STRIDE(i, n) dst[i] = __float2half(src[i]);
}

template <class T>
__global__ void to_float_kernel(const T* src, float* dst, int64_t n, bool add) {
  RAMJET_GRID_STRIDE(i, n) dst[i] = (add ? dst[i] : 0.0f) + load(src, i);
}

template <class T>
__global__ void add_kernel(const T* a, const T* b, T* y, int64_t n) {
  RAMJET_GRID_STRIDE(i, n) store(y, i, load(a, i) + load(b, i));
}

template <class T>
__global__ void add_into_kernel(T* dst, const T* src, int64_t n) {
  RAMJET_GRID_STRIDE(i, n) store(dst, i, load(dst, i) + load(src, i));
}

template <class T>
__global__ void multiply_kernel(const T* a, const T* b, T* y, int64_t n) {
  RAMJET_GRID_STRIDE(i, n) store(y, i, load(a, i) * load(b, i));
}

template <class T>
__global__ void subtract_kernel(const T* a, const T* b, T* y, int64_t n) {
  RAMJET_GRID_STRIDE(i, n) store(y, i, b == nullptr ? -load(a, i) : load(a, i) - load(b, i));
}

template <class T>
__global__ void channel_bias_kernel(T* y, const T* bias, int64_t n, int64_t channels) {
  RAMJET_GRID_STRIDE(i, n) store(y, i, load(y, i) + load(bias, i % channels));
}

// One thread per element of the Keras kernel; i indexes HWIO, j the same element in OHWI.
template <class T>
__global__ void filter_from_keras_kernel(const float* hwio, T* ohwi, FilterShape s) {
  const int64_t n = s.kh * s.kw * s.in * s.out;
  RAMJET_GRID_STRIDE(i, n) {
    const int64_t o = i % s.out, c = (i / s.out) % s.in, w = (i / (s.out * s.in)) % s.kw, h = i / (s.out * s.in * s.kw);
    store(ohwi, ((o * s.kh + h) * s.kw + w) * s.in + c, hwio[i]);
  }
}

template <class T>
__global__ void filter_gradient_kernel(const T* ohwi, float* hwio, FilterShape s, bool add) {
  const int64_t n = s.kh * s.kw * s.in * s.out;
  RAMJET_GRID_STRIDE(i, n) {
    const int64_t o = i % s.out, c = (i / s.out) % s.in, w = (i / (s.out * s.in)) % s.kw, h = i / (s.out * s.in * s.kw);
    hwio[i] = (add ? hwio[i] : 0.0f) + load(ohwi, ((o * s.kh + h) * s.kw + w) * s.in + c);
  }
}

// One thread per element of the padded image: a copy of the input's element, or zero.
template <class T>
__global__ void pad_kernel(const T* x, T* y, PadShape s) {
  const int64_t H = s.h + s.top + s.bottom, W = s.w + s.left + s.right, n = s.n * H * W * s.c;
  RAMJET_GRID_STRIDE(i, n) {
    const int64_t c = i % s.c, col = (i / s.c) % W, row = (i / (s.c * W)) % H, b = i / (s.c * W * H);
    const int64_t r = row - s.top, q = col - s.left;
    store(y, i, r >= 0 && r < s.h && q >= 0 && q < s.w ? load(x, ((b * s.h + r) * s.w + q) * s.c + c) : 0.0f);
  }
}

// One thread per element of the unpadded image.
template <class T>
__global__ void crop_kernel(const T* padded, T* x, PadShape s) {
  const int64_t H = s.h + s.top + s.bottom, W = s.w + s.left + s.right, n = s.n * s.h * s.w * s.c;
  RAMJET_GRID_STRIDE(i, n) {
    const int64_t c = i % s.c, q = (i / s.c) % s.w, r = (i / (s.c * s.w)) % s.h, b = i / (s.c * s.w * s.h);
    store(x, i, load(padded, ((b * H + r + s.top) * W + q + s.left) * s.c + c));
  }
}

}  // namespace

void pad_image(const void* x, void* y, const PadShape& s, cudaDataType_t dtype, cudaStream_t stream) {
  const int64_t n = s.n * (s.h + s.top + s.bottom) * (s.w + s.left + s.right) * s.c;
  if (dtype == CUDA_R_16F)
    pad_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const __half*>(x), static_cast<__half*>(y), s);
  else
    pad_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const float*>(x), static_cast<float*>(y), s);
  check(cudaGetLastError(), "padding kernel launch");
}

void crop_image(const void* padded, void* x, const PadShape& s, cudaDataType_t dtype, cudaStream_t stream) {
  const int64_t n = s.n * s.h * s.w * s.c;
  if (dtype == CUDA_R_16F)
    crop_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const __half*>(padded), static_cast<__half*>(x), s);
  else
    crop_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const float*>(padded), static_cast<float*>(x), s);
  check(cudaGetLastError(), "crop kernel launch");
}

void filter_from_keras(const float* hwio, void* ohwi, const FilterShape& s, cudaDataType_t dtype, cudaStream_t stream) {
  if (dtype == CUDA_R_16F)
    filter_from_keras_kernel<<<blocks_for(s.count()), kThreads, 0, stream>>>(hwio, static_cast<__half*>(ohwi), s);
  else
    filter_from_keras_kernel<<<blocks_for(s.count()), kThreads, 0, stream>>>(hwio, static_cast<float*>(ohwi), s);
  check(cudaGetLastError(), "filter layout kernel launch");
}

void filter_gradient_to_keras(const void* ohwi, float* hwio, const FilterShape& s, cudaDataType_t dtype, bool add,
                              cudaStream_t stream) {
  if (dtype == CUDA_R_16F)
    filter_gradient_kernel<<<blocks_for(s.count()), kThreads, 0, stream>>>(static_cast<const __half*>(ohwi), hwio, s, add);
  else
    filter_gradient_kernel<<<blocks_for(s.count()), kThreads, 0, stream>>>(static_cast<const float*>(ohwi), hwio, s, add);
  check(cudaGetLastError(), "filter gradient layout kernel launch");
}

void to_half(const float* src, void* dst, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  to_half_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, static_cast<__half*>(dst), n);
  check(cudaGetLastError(), "float32 to float16 kernel launch");
}

void to_float(const void* src, float* dst, int64_t n, cudaDataType_t dtype, bool add, cudaStream_t stream) {
  if (n == 0) return;
  if (dtype == CUDA_R_16F)
    to_float_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const __half*>(src), dst, n, add);
  else
    to_float_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const float*>(src), dst, n, add);
  check(cudaGetLastError(), "to float32 kernel launch");
}

void add(const void* a, const void* b, void* y, int64_t n, cudaDataType_t dtype, cudaStream_t stream) {
  if (n == 0) return;
  if (dtype == CUDA_R_16F)
    add_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const __half*>(a), static_cast<const __half*>(b),
                                                       static_cast<__half*>(y), n);
  else
    add_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const float*>(a), static_cast<const float*>(b),
                                                       static_cast<float*>(y), n);
  check(cudaGetLastError(), "add kernel launch");
}

void multiply(const void* a, const void* b, void* y, int64_t n, cudaDataType_t dtype, cudaStream_t stream) {
  if (n == 0) return;
  if (dtype == CUDA_R_16F)
    multiply_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const __half*>(a), static_cast<const __half*>(b),
                                                            static_cast<__half*>(y), n);
  else
    multiply_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const float*>(a), static_cast<const float*>(b),
                                                            static_cast<float*>(y), n);
  check(cudaGetLastError(), "multiply kernel launch");
}

void subtract(const void* a, const void* b, void* y, int64_t n, cudaDataType_t dtype, cudaStream_t stream) {
  if (n == 0) return;
  if (dtype == CUDA_R_16F)
    subtract_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const __half*>(a), static_cast<const __half*>(b),
                                                            static_cast<__half*>(y), n);
  else
    subtract_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const float*>(a), static_cast<const float*>(b),
                                                            static_cast<float*>(y), n);
  check(cudaGetLastError(), "subtract kernel launch");
}

void add_channel_bias(void* y, const void* bias, int64_t n, int64_t channels, cudaDataType_t dtype,
                      cudaStream_t stream) {
  if (n == 0) return;
  if (dtype == CUDA_R_16F)
    channel_bias_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<__half*>(y), static_cast<const __half*>(bias),
                                                                n, channels);
  else
    channel_bias_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<float*>(y), static_cast<const float*>(bias),
                                                                n, channels);
  check(cudaGetLastError(), "bias kernel launch");
}

void add_into(void* dst, const void* src, int64_t n, cudaDataType_t dtype, cudaStream_t stream) {
  if (n == 0) return;
  if (dtype == CUDA_R_16F)
    add_into_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<__half*>(dst), static_cast<const __half*>(src), n);
  else
    add_into_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<float*>(dst), static_cast<const float*>(src), n);
  check(cudaGetLastError(), "accumulate kernel launch");
}

}  // namespace cuda_plugin
