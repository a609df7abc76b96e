// Batch normalization over the channels of a [rows, channels] tensor (an NHWC image's rows are its batch × height ×
// width positions), as Keras's BatchNormalization: in training, the batch's mean and biased variance normalise,
// and the moving statistics move toward them by (1 − momentum); outside training, the moving statistics
// normalise. Float32 arithmetic for float32 or float16 activations; gamma, beta and the statistics float32. The
// per-channel sums run in a fixed order (one block a channel): the same every run.
#pragma once

#include <library_types.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace cuda_plugin {

struct BatchNormShape {
  int64_t rows, channels;
  float epsilon;
};

// Training: mean and rstd (1/√(var + ε)) of the batch per channel (kept for backward), y, and the moving
// statistics updated in place.
void batch_norm_train(const void* x, const float* gamma, const float* beta, void* y, float* mean, float* rstd,
                      float* moving_mean, float* moving_variance, float momentum, const BatchNormShape& s,
                      cudaDataType_t dtype, cudaStream_t stream);
// Inference: normalised by the moving statistics.
void batch_norm_infer(const void* x, const float* gamma, const float* beta, const float* moving_mean,
                      const float* moving_variance, void* y, const BatchNormShape& s, cudaDataType_t dtype,
                      cudaStream_t stream);
// dx (when not null), dgamma and dbeta (overwritten) from the training forward's x, mean and rstd.
void batch_norm_backward(const void* x, const void* dy, const float* gamma, const float* mean, const float* rstd,
                         void* dx, float* dgamma, float* dbeta, const BatchNormShape& s, cudaDataType_t dtype,
                         cudaStream_t stream);

}  // namespace cuda_plugin
