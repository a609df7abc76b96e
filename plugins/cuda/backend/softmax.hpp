// Softmax over the last axis of `rows` rows of `width`, in float32 arithmetic for float32 or float16 tensors (as
// PyTorch's autocast keeps softmax in float32): forward y, and backward dx = y · (dy − Σ dy · y) from the forward's
// output. Enqueued on `stream`.
#pragma once

#include <library_types.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace cuda_plugin {

// `causal_period` > 0: row r keeps only its first (r mod causal_period) + 1 entries, the rest 0 — attention's causal
// mask, where the rows run over query positions (a masked score of −1e9 as Keras adds gives the same 0).
void softmax_forward(const void* x, void* y, int64_t rows, int64_t width, cudaDataType_t dtype, cudaStream_t stream,
                     int64_t causal_period = 0);
void softmax_backward(const void* y, const void* dy, void* dx, int64_t rows, int64_t width, cudaDataType_t dtype,
                      cudaStream_t stream);

}  // namespace cuda_plugin
