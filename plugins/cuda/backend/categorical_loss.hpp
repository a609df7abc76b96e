// categorical_cross_entropy from logits against float targets [rows, classes], as the cpu backend takes it (Keras's
// label smoothing: y' = (1 − ε) y + ε / classes; the targets need not sum to one): per row −Σ y'_j log softmax_j,
// right when the logits' arg-max is the targets' (the first, on ties); the mean over rows, summed by one block in
// a fixed order. The gradient is (p_j Σ y' − y'_j) · scale / rows. Float32 arithmetic for float32 or float16 logits;
// enqueued on `stream`.
#pragma once

#include <library_types.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace cuda_plugin {

struct RowLossResult {  // in device memory, read after the stream has run
  float loss;
  int32_t correct;
};

// `row_loss` and `row_hit` are scratch of `rows` elements each.
void categorical_forward(const void* logits, const float* targets, int64_t rows, int64_t classes, float smoothing,
                         cudaDataType_t dtype, float* row_loss, int32_t* row_hit, RowLossResult* result,
                         cudaStream_t stream);
void categorical_backward(const void* logits, const float* targets, void* dlogits, int64_t rows, int64_t classes,
                          float smoothing, float scale, cudaDataType_t dtype, cudaStream_t stream);

}  // namespace cuda_plugin
