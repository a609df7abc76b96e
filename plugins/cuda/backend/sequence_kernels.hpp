// The kernels of the sequence layers: embedding lookups and their gradient, learned position rows, RMS
// normalisation, and a strided batched matrix product for matmul and attention. Float32 arithmetic whatever the
// tensors hold (T: float32 or float16, as `dtype` says); tables and scales are float32 variables. Each output
// element is one thread's fixed-order sum, so results are the same every run. Enqueued on `stream`.
#pragma once

#include <library_types.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace cuda_plugin {

// out [rows, dim] (T) = table [vocabulary, dim] rows picked by ids [rows] (checked by the host).
void embedding_forward(const int32_t* ids, const float* table, void* out, int64_t rows, int64_t dim,
                       cudaDataType_t dtype, cudaStream_t stream);
// dtable[tokens[u], j] = Σ dout[rows_of[k], j] over k in [token_start[u], token_start[u + 1]), for each of the
// `distinct` tokens of the batch; other rows of dtable are left as they are (the caller zeroes them).
void embedding_backward(const int32_t* tokens, const int64_t* token_start, const int32_t* rows_of, const void* dout,
                        float* dtable, int64_t distinct, int64_t dim, cudaDataType_t dtype, cudaStream_t stream);

// out [n, width] = in [n, width] + table [width] (the first `width` of a position table).
void add_rows(const void* in, const float* table, void* out, int64_t n, int64_t width, cudaDataType_t dtype,
              cudaStream_t stream);
// sums [width] (float32) = Σ over the n rows of x [n, width].
void column_sums_to_float(const void* x, float* sums, int64_t n, int64_t width, cudaDataType_t dtype,
                          cudaStream_t stream);

// RMS normalisation over the last axis (Keras's RMSNormalization): y = x · q · scale, q = 1 / sqrt(mean(x²) + ε),
// keeping q per row for the backward: dx = q (scale dy) − x q³ mean(x scale dy); dscale = Σ_rows dy x q.
void rms_norm_forward(const void* x, const float* scale, void* y, float* inverse_rms, int64_t rows, int64_t dim,
                      float epsilon, cudaDataType_t dtype, cudaStream_t stream);
void rms_norm_backward(const void* x, const void* dy, const float* scale, const float* inverse_rms, void* dx,
                       float* dscale, int64_t rows, int64_t dim, cudaDataType_t dtype, cudaStream_t stream);

// A matrix of a batch laid out by strides (in elements): element (b0, b1, i, j) is at
// b0 · batch0 + b1 · batch1 + i · row + j · col.
struct StridedMatrix {
  void* data;
  cudaDataType_t dtype;  // CUDA_R_32F or CUDA_R_16F
  int64_t batch0, batch1, row, col;
};

// C = alpha · A B (+ C when `accumulate`), for batch0_count × batch1_count pairs of A [m, k] and B [k, n].
void strided_matmul(const StridedMatrix& a, const StridedMatrix& b, const StridedMatrix& c, int64_t batch0_count,
                    int64_t batch1_count, int64_t m, int64_t n, int64_t k, float alpha, bool accumulate,
                    cudaStream_t stream);

}  // namespace cuda_plugin
