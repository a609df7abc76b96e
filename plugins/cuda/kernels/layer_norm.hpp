// Layer normalization over the last axis on the GPU, as Keras's LayerNormalization (biased variance, epsilon inside
// the square root, a scale gamma and an offset beta per feature): the forward keeps each row's mean and 1/σ for the
// backward. Float32 arithmetic for float32 or float16 activations; gamma, beta and their gradients float32 (they
// are variables). The parameter gradients are column sums in a fixed order: the same every run.
#pragma once

#include <library_types.h>  // cudaDataType_t
#include <cuda_runtime_api.h>

#include <cstdint>

namespace cuda_plugin {

// y = (x − mean) · rstd · gamma + beta per row of `features`; `mean` and `rstd` get `rows` floats.
void layer_norm_forward(const void* x, const float* gamma, const float* beta, void* y, float* mean, float* rstd,
                        int64_t rows, int64_t features, float epsilon, cudaDataType_t dtype, cudaStream_t stream);
// dx, and dgamma, dbeta (each `features` floats, overwritten), from the forward's x, mean and rstd.
void layer_norm_backward(const void* x, const void* dy, const float* gamma, const float* mean, const float* rstd,
                         void* dx, float* dgamma, float* dbeta, int64_t rows, int64_t features, cudaDataType_t dtype,
                         cudaStream_t stream);

}  // namespace cuda_plugin
