// Softmax over the last axis of `rows` rows of `width`, in float32 arithmetic for float32 or float16 tensors (as
// PyTorch's autocast keeps softmax in float32): forward y, and backward dx = y · (dy − Σ dy · y) from the forward's
// output. Enqueued on `stream`.
#pragma once

#include <library_types.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace cuda_plugin {

void softmax_forward(const void* x, void* y, int64_t rows, int64_t width, cudaDataType_t dtype, cudaStream_t stream);
void softmax_backward(const void* y, const void* dy, void* dx, int64_t rows, int64_t width, cudaDataType_t dtype,
                      cudaStream_t stream);

}  // namespace cuda_plugin
