#include "sequence_kernels.hpp"

#include "cuda_check.hpp"
#include "float_access.cuh"
#include "grid.cuh"

namespace cuda_plugin {
namespace {

template <class T>
__global__ void embedding_forward_kernel(const int32_t* ids, const float* table, T* out, int64_t rows, int64_t dim) {
  RAMJET_GRID_STRIDE(i, rows * dim) store(out, i, table[static_cast<int64_t>(ids[i / dim]) * dim + i % dim]);
}

template <class T>
__global__ void embedding_backward_kernel(const int32_t* tokens, const int64_t* token_start, const int32_t* rows_of,
                                          const T* dout, float* dtable, int64_t distinct, int64_t dim) {
  RAMJET_GRID_STRIDE(i, distinct * dim) {
    const int64_t u = i / dim, j = i % dim;
    float sum = 0.0f;
    for (int64_t k = token_start[u]; k < token_start[u + 1]; ++k) sum += load(dout, static_cast<int64_t>(rows_of[k]) * dim + j);
    dtable[static_cast<int64_t>(tokens[u]) * dim + j] = sum;
  }
}

template <class T>
__global__ void add_rows_kernel(const T* in, const float* table, T* out, int64_t n, int64_t width) {
  RAMJET_GRID_STRIDE(i, n * width) store(out, i, load(in, i) + table[i % width]);
}

template <class T>
__global__ void column_sums_kernel(const T* x, float* sums, int64_t n, int64_t width) {
  RAMJET_GRID_STRIDE(j, width) {
    float sum = 0.0f;
    for (int64_t r = 0; r < n; ++r) sum += load(x, r * width + j);
    sums[j] = sum;
  }
}

template <class T>
__global__ void rms_forward_kernel(const T* x, const float* scale, T* y, float* inverse_rms, int64_t rows, int64_t dim,
                                   float epsilon) {
  RAMJET_GRID_STRIDE(r, rows) {
    float squares = 0.0f;
    for (int64_t j = 0; j < dim; ++j) {
      const float v = load(x, r * dim + j);
      squares += v * v;
    }
    const float q = 1.0f / sqrtf(squares / static_cast<float>(dim) + epsilon);
    inverse_rms[r] = q;
    for (int64_t j = 0; j < dim; ++j) store(y, r * dim + j, load(x, r * dim + j) * q * scale[j]);
  }
}

template <class T>
__global__ void rms_backward_kernel(const T* x, const T* dy, const float* scale, const float* inverse_rms, T* dx,
                                    int64_t rows, int64_t dim) {
  RAMJET_GRID_STRIDE(r, rows) {
    const float q = inverse_rms[r];
    float dot = 0.0f;
    for (int64_t j = 0; j < dim; ++j) dot += load(x, r * dim + j) * scale[j] * load(dy, r * dim + j);
    const float mean = dot / static_cast<float>(dim);
    for (int64_t j = 0; j < dim; ++j)
      store(dx, r * dim + j, q * scale[j] * load(dy, r * dim + j) - load(x, r * dim + j) * q * q * q * mean);
  }
}

template <class T>
__global__ void rms_scale_kernel(const T* x, const T* dy, const float* inverse_rms, float* dscale, int64_t rows,
                                 int64_t dim) {
  RAMJET_GRID_STRIDE(j, dim) {
    float sum = 0.0f;
    for (int64_t r = 0; r < rows; ++r) sum += load(dy, r * dim + j) * load(x, r * dim + j) * inverse_rms[r];
    dscale[j] = sum;
  }
}

template <class TA, class TB, class TC>
__global__ void strided_matmul_kernel(StridedMatrix a, StridedMatrix b, StridedMatrix c, int64_t batch1_count,
                                      int64_t m, int64_t n, int64_t k, float alpha, bool accumulate, int64_t total) {
  const TA* A = static_cast<const TA*>(a.data);
  const TB* B = static_cast<const TB*>(b.data);
  TC* C = static_cast<TC*>(c.data);
  RAMJET_GRID_STRIDE(e, total) {
    const int64_t j = e % n, i = e / n % m, b1 = e / (n * m) % batch1_count, b0 = e / (n * m * batch1_count);
    const int64_t a0 = b0 * a.batch0 + b1 * a.batch1 + i * a.row, b00 = b0 * b.batch0 + b1 * b.batch1 + j * b.col;
    float sum = 0.0f;
    for (int64_t p = 0; p < k; ++p) sum += load(A, a0 + p * a.col) * load(B, b00 + p * b.row);
    const int64_t at = b0 * c.batch0 + b1 * c.batch1 + i * c.row + j * c.col;
    store(C, at, alpha * sum + (accumulate ? load(C, at) : 0.0f));
  }
}

template <class TA, class TB>
void matmul_into(const StridedMatrix& a, const StridedMatrix& b, const StridedMatrix& c, int64_t b0, int64_t b1,
                 int64_t m, int64_t n, int64_t k, float alpha, bool accumulate, cudaStream_t stream) {
  const int64_t total = b0 * b1 * m * n;
  if (c.dtype == CUDA_R_16F)
    strided_matmul_kernel<TA, TB, __half><<<grid_blocks(total), kGridThreads, 0, stream>>>(a, b, c, b1, m, n, k, alpha,
                                                                                          accumulate, total);
  else
    strided_matmul_kernel<TA, TB, float><<<grid_blocks(total), kGridThreads, 0, stream>>>(a, b, c, b1, m, n, k, alpha,
                                                                                         accumulate, total);
}

template <class TA>
void matmul_b(const StridedMatrix& a, const StridedMatrix& b, const StridedMatrix& c, int64_t b0, int64_t b1,
              int64_t m, int64_t n, int64_t k, float alpha, bool accumulate, cudaStream_t stream) {
  if (b.dtype == CUDA_R_16F) matmul_into<TA, __half>(a, b, c, b0, b1, m, n, k, alpha, accumulate, stream);
  else matmul_into<TA, float>(a, b, c, b0, b1, m, n, k, alpha, accumulate, stream);
}

// The launch for `dtype`'s element type, T = float or __half.
#define RAMJET_BY_DTYPE(dtype, call_half, call_float) \
  do {                                                \
    if ((dtype) == CUDA_R_16F) call_half;             \
    else call_float;                                  \
  } while (0)

}  // namespace

void embedding_forward(const int32_t* ids, const float* table, void* out, int64_t rows, int64_t dim,
                       cudaDataType_t dtype, cudaStream_t stream) {
  const unsigned blocks = grid_blocks(rows * dim);
  RAMJET_BY_DTYPE(dtype,
                  (embedding_forward_kernel<<<blocks, kGridThreads, 0, stream>>>(ids, table, static_cast<__half*>(out), rows, dim)),
                  (embedding_forward_kernel<<<blocks, kGridThreads, 0, stream>>>(ids, table, static_cast<float*>(out), rows, dim)));
  check(cudaGetLastError(), "embedding kernel launch");
}

void embedding_backward(const int32_t* tokens, const int64_t* token_start, const int32_t* rows_of, const void* dout,
                        float* dtable, int64_t distinct, int64_t dim, cudaDataType_t dtype, cudaStream_t stream) {
  if (distinct == 0) return;
  const unsigned blocks = grid_blocks(distinct * dim);
  RAMJET_BY_DTYPE(dtype,
                  (embedding_backward_kernel<<<blocks, kGridThreads, 0, stream>>>(
                      tokens, token_start, rows_of, static_cast<const __half*>(dout), dtable, distinct, dim)),
                  (embedding_backward_kernel<<<blocks, kGridThreads, 0, stream>>>(
                      tokens, token_start, rows_of, static_cast<const float*>(dout), dtable, distinct, dim)));
  check(cudaGetLastError(), "embedding gradient kernel launch");
}

void add_rows(const void* in, const float* table, void* out, int64_t n, int64_t width, cudaDataType_t dtype,
              cudaStream_t stream) {
  const unsigned blocks = grid_blocks(n * width);
  RAMJET_BY_DTYPE(dtype,
                  (add_rows_kernel<<<blocks, kGridThreads, 0, stream>>>(static_cast<const __half*>(in), table,
                                                                        static_cast<__half*>(out), n, width)),
                  (add_rows_kernel<<<blocks, kGridThreads, 0, stream>>>(static_cast<const float*>(in), table,
                                                                        static_cast<float*>(out), n, width)));
  check(cudaGetLastError(), "position rows kernel launch");
}

void column_sums_to_float(const void* x, float* sums, int64_t n, int64_t width, cudaDataType_t dtype,
                          cudaStream_t stream) {
  const unsigned blocks = grid_blocks(width);
  RAMJET_BY_DTYPE(dtype,
                  (column_sums_kernel<<<blocks, kGridThreads, 0, stream>>>(static_cast<const __half*>(x), sums, n, width)),
                  (column_sums_kernel<<<blocks, kGridThreads, 0, stream>>>(static_cast<const float*>(x), sums, n, width)));
  check(cudaGetLastError(), "column sums kernel launch");
}

void rms_norm_forward(const void* x, const float* scale, void* y, float* inverse_rms, int64_t rows, int64_t dim,
                      float epsilon, cudaDataType_t dtype, cudaStream_t stream) {
  const unsigned blocks = grid_blocks(rows);
  RAMJET_BY_DTYPE(dtype,
                  (rms_forward_kernel<<<blocks, kGridThreads, 0, stream>>>(
                      static_cast<const __half*>(x), scale, static_cast<__half*>(y), inverse_rms, rows, dim, epsilon)),
                  (rms_forward_kernel<<<blocks, kGridThreads, 0, stream>>>(
                      static_cast<const float*>(x), scale, static_cast<float*>(y), inverse_rms, rows, dim, epsilon)));
  check(cudaGetLastError(), "rms_norm kernel launch");
}

void rms_norm_backward(const void* x, const void* dy, const float* scale, const float* inverse_rms, void* dx,
                       float* dscale, int64_t rows, int64_t dim, cudaDataType_t dtype, cudaStream_t stream) {
  const unsigned row_blocks = grid_blocks(rows), column_blocks = grid_blocks(dim);
  if (dtype == CUDA_R_16F) {
    auto* xs = static_cast<const __half*>(x);
    auto* dys = static_cast<const __half*>(dy);
    if (dx != nullptr)
      rms_backward_kernel<<<row_blocks, kGridThreads, 0, stream>>>(xs, dys, scale, inverse_rms, static_cast<__half*>(dx),
                                                                   rows, dim);
    if (dscale != nullptr) rms_scale_kernel<<<column_blocks, kGridThreads, 0, stream>>>(xs, dys, inverse_rms, dscale, rows, dim);
  } else {
    auto* xs = static_cast<const float*>(x);
    auto* dys = static_cast<const float*>(dy);
    if (dx != nullptr)
      rms_backward_kernel<<<row_blocks, kGridThreads, 0, stream>>>(xs, dys, scale, inverse_rms, static_cast<float*>(dx),
                                                                   rows, dim);
    if (dscale != nullptr) rms_scale_kernel<<<column_blocks, kGridThreads, 0, stream>>>(xs, dys, inverse_rms, dscale, rows, dim);
  }
  check(cudaGetLastError(), "rms_norm gradient kernel launch");
}

void strided_matmul(const StridedMatrix& a, const StridedMatrix& b, const StridedMatrix& c, int64_t batch0_count,
                    int64_t batch1_count, int64_t m, int64_t n, int64_t k, float alpha, bool accumulate,
                    cudaStream_t stream) {
  if (batch0_count * batch1_count * m * n == 0) return;
  if (a.dtype == CUDA_R_16F) matmul_b<__half>(a, b, c, batch0_count, batch1_count, m, n, k, alpha, accumulate, stream);
  else matmul_b<float>(a, b, c, batch0_count, batch1_count, m, n, k, alpha, accumulate, stream);
  check(cudaGetLastError(), "matmul kernel launch");
}

}  // namespace cuda_plugin
