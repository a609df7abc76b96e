// The losses taken element by element against float targets of the input's shape — mse, l1 and binary
// cross-entropy from logits — averaged over every element, as the cpu backend takes them. The loss is summed by one
// block in a fixed order (the same every run), in double; the gradient (d loss / d x times `scale`) is written in
// the input's dtype. Float32 arithmetic for float32 or float16 inputs; targets are float32. Enqueued on `stream`.
#pragma once

#include <library_types.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace cuda_plugin {

enum class PointLoss { mse, l1, binary_cross_entropy };

struct PointLossResult {  // in device memory, read after the stream has run
  float loss;
  int32_t correct;  // binary cross-entropy: elements whose logit's sign matches the target's side of 0.5
};

void point_loss_forward(PointLoss kind, const void* x, const float* targets, int64_t n, cudaDataType_t dtype,
                        PointLossResult* result, cudaStream_t stream);
void point_loss_backward(PointLoss kind, const void* x, const float* targets, void* dx, int64_t n, float scale,
                         cudaDataType_t dtype, cudaStream_t stream);

}  // namespace cuda_plugin
