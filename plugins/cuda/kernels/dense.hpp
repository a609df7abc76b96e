// A dense layer's three products on cuBLASLt, in Keras's layouts (row-major x [M, K], kernel [K, N], y [M, N]):
//   forward          y  = x · W (+ b) (then relu), bias and relu fused as cuBLASLt epilogues
//   backward_data    dx = dy · Wᵀ
//   backward_weights dW = xᵀ · dy, and db = the column sums of dy (our kernel)
// cuBLASLt is column-major; a row-major matrix is its transpose there, so each product is computed transposed
// (yᵀ = Wᵀ · xᵀ) with no copy. float32 (full float32 arithmetic, no TF32) or float16 with float32 accumulation.
// The algorithm for each product is chosen once per shape by cuBLASLt's heuristic and kept.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

namespace cuda_plugin {

// A cuBLASLt failure as a ramjet::Error naming the call and the layer (RAMJET_ERR_DEVICE).
void check_cublas(cublasStatus_t status, const char* call, const std::string& layer);

enum class DenseEpilogue { none, bias, bias_relu };

class DenseProducts {
 public:
  // `dtype`: CUDA_R_32F or CUDA_R_16F for x, W, b, y and the gradients. `handle` is borrowed; `workspace` bytes are
  // what the caller passes to each call (cuBLASLt may use up to that many).
  DenseProducts(cublasLtHandle_t handle, std::string layer, int64_t m, int64_t k, int64_t n, cudaDataType_t dtype,
                DenseEpilogue epilogue, size_t workspace_bytes);
  ~DenseProducts();
  DenseProducts(const DenseProducts&) = delete;
  DenseProducts& operator=(const DenseProducts&) = delete;

  void forward(const void* x, const void* w, const void* bias, void* y, void* workspace, cudaStream_t stream) const;
  void backward_data(const void* dy, const void* w, void* dx, void* workspace, cudaStream_t stream) const;
  // `db` may be null (no bias).
  void backward_weights(const void* x, const void* dy, void* dw, void* db, void* workspace,
                        cudaStream_t stream) const;

 private:
  struct Product;
  Product* make(int64_t m, int64_t n, int64_t k, cublasOperation_t op_a, cublasOperation_t op_b, int64_t lda,
                int64_t ldb, int64_t ldc, cublasLtEpilogue_t epilogue, const char* what);

  cublasLtHandle_t handle_;
  std::string layer_;
  int64_t m_, k_, n_;
  cudaDataType_t dtype_;
  size_t workspace_bytes_;
  Product* forward_ = nullptr;
  Product* data_ = nullptr;
  Product* weights_ = nullptr;
};

// db[n] = Σ_m dy[m, n] for row-major dy [M, N], accumulated in float32 (defined in dense_bias.cu).
void column_sums(const void* dy, void* db, int64_t m, int64_t n, cudaDataType_t dtype, cudaStream_t stream);

}  // namespace cuda_plugin
