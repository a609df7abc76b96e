#include "dense.hpp"

#include <ramjet/sdk/error.hpp>

namespace cuda_plugin {

void check_cublas(cublasStatus_t status, const char* call, const std::string& layer) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw ramjet::Error(status == CUBLAS_STATUS_ALLOC_FAILED ? RAMJET_ERR_OUT_OF_MEMORY : RAMJET_ERR_DEVICE,
                      std::string(call) + " (layer " + layer + "): " + cublasLtGetStatusString(status));
}

// One product's descriptors and its chosen algorithm.
struct DenseProducts::Product {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Product() {
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

DenseProducts::DenseProducts(cublasLtHandle_t handle, std::string layer, int64_t m, int64_t k, int64_t n,
                             cudaDataType_t dtype, DenseEpilogue epilogue, size_t workspace_bytes)
    : handle_(handle), layer_(std::move(layer)), m_(m), k_(k), n_(n), dtype_(dtype), workspace_bytes_(workspace_bytes) {
  if (dtype != CUDA_R_32F && dtype != CUDA_R_16F)
    throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, "dense (layer " + layer_ + "): only float32 and float16 products");
  const cublasLtEpilogue_t forward_epilogue = epilogue == DenseEpilogue::none   ? CUBLASLT_EPILOGUE_DEFAULT
                                              : epilogue == DenseEpilogue::bias ? CUBLASLT_EPILOGUE_BIAS
                                                                                : CUBLASLT_EPILOGUE_RELU_BIAS;
  try {
    // Column-major, each product transposed: yᵀ [N, M] = Wᵀ [N, K] · xᵀ [K, M] (the row-major buffers as they are).
    forward_ = make(n, m, k, CUBLAS_OP_N, CUBLAS_OP_N, n, k, n, forward_epilogue, "forward");
    // dxᵀ [K, M] = W [K, N] · dyᵀ [N, M]: the stored Wᵀ read transposed.
    data_ = make(k, m, n, CUBLAS_OP_T, CUBLAS_OP_N, n, n, k, CUBLASLT_EPILOGUE_DEFAULT, "backward data");
    // dWᵀ [N, K] = dyᵀ [N, M] · x [M, K]: the stored xᵀ read transposed.
    weights_ = make(n, k, m, CUBLAS_OP_N, CUBLAS_OP_T, n, k, n, CUBLASLT_EPILOGUE_DEFAULT, "backward weights");
  } catch (...) {
    delete forward_;
    delete data_;
    delete weights_;
    throw;
  }
}

DenseProducts::~DenseProducts() {
  delete forward_;
  delete data_;
  delete weights_;
}

DenseProducts::Product* DenseProducts::make(int64_t m, int64_t n, int64_t k, cublasOperation_t op_a,
                                            cublasOperation_t op_b, int64_t lda, int64_t ldb, int64_t ldc,
                                            cublasLtEpilogue_t epilogue, const char* what) {
  auto* p = new Product;
  try {
    check_cublas(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate", layer_);
    check_cublas(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a),
                 "cublasLtMatmulDescSetAttribute(TRANSA)", layer_);
    check_cublas(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b),
                 "cublasLtMatmulDescSetAttribute(TRANSB)", layer_);
    check_cublas(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue),
                 "cublasLtMatmulDescSetAttribute(EPILOGUE)", layer_);
    const bool a_plain = op_a == CUBLAS_OP_N, b_plain = op_b == CUBLAS_OP_N;
    check_cublas(cublasLtMatrixLayoutCreate(&p->a, dtype_, a_plain ? m : k, a_plain ? k : m, lda),
                 "cublasLtMatrixLayoutCreate(A)", layer_);
    check_cublas(cublasLtMatrixLayoutCreate(&p->b, dtype_, b_plain ? k : n, b_plain ? n : k, ldb),
                 "cublasLtMatrixLayoutCreate(B)", layer_);
    check_cublas(cublasLtMatrixLayoutCreate(&p->c, dtype_, m, n, ldc), "cublasLtMatrixLayoutCreate(C)", layer_);
    cublasLtMatmulPreference_t preference = nullptr;
    check_cublas(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate", layer_);
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    cublasStatus_t status = cublasLtMatmulPreferenceSetAttribute(
        preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes_, sizeof workspace_bytes_);
    if (status == CUBLAS_STATUS_SUCCESS)
      status = cublasLtMatmulAlgoGetHeuristic(handle_, p->desc, p->a, p->b, p->c, p->c, preference, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(preference);
    check_cublas(status, "cublasLtMatmulAlgoGetHeuristic", layer_);
    if (found == 0)
      throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, std::string("cublasLtMatmulAlgoGetHeuristic (layer ") + layer_ +
                                                      "): no algorithm for the " + what + " product");
    p->algo = result.algo;
  } catch (...) {
    delete p;
    throw;
  }
  return p;
}

namespace {

void run(cublasLtHandle_t handle, const cublasLtMatmulDesc_t desc, const cublasLtMatmulAlgo_t& algo,
         cublasLtMatrixLayout_t a_layout, const void* a, cublasLtMatrixLayout_t b_layout, const void* b,
         cublasLtMatrixLayout_t c_layout, void* c, void* workspace, size_t workspace_bytes, cudaStream_t stream,
         const std::string& layer) {
  const float one = 1.0f, zero = 0.0f;
  check_cublas(cublasLtMatmul(handle, desc, &one, a, a_layout, b, b_layout, &zero, c, c_layout, c, c_layout, &algo,
                              workspace, workspace_bytes, stream),
               "cublasLtMatmul", layer);
}

}  // namespace

void DenseProducts::forward(const void* x, const void* w, const void* bias, void* y, void* workspace,
                            cudaStream_t stream) const {
  if (bias != nullptr)
    check_cublas(cublasLtMatmulDescSetAttribute(forward_->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias),
                 "cublasLtMatmulDescSetAttribute(BIAS_POINTER)", layer_);
  run(handle_, forward_->desc, forward_->algo, forward_->a, w, forward_->b, x, forward_->c, y, workspace,
      workspace_bytes_, stream, layer_);
}

void DenseProducts::backward_data(const void* dy, const void* w, void* dx, void* workspace, cudaStream_t stream) const {
  run(handle_, data_->desc, data_->algo, data_->a, w, data_->b, dy, data_->c, dx, workspace, workspace_bytes_, stream,
      layer_);
}

void DenseProducts::backward_weights(const void* x, const void* dy, void* dw, void* db, void* workspace,
                                     cudaStream_t stream) const {
  run(handle_, weights_->desc, weights_->algo, weights_->a, dy, weights_->b, x, weights_->c, dw, workspace,
      workspace_bytes_, stream, layer_);
  if (db != nullptr) column_sums(dy, db, m_, n_, dtype_, stream);
}

}  // namespace cuda_plugin
