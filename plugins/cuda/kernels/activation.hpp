// The graph IR's elementwise activations on the GPU, forward and backward, with Keras's definitions: relu, relu6,
// sigmoid, tanh, gelu (exact, with erf, as Keras's default), swish (x·sigmoid(x)), elu (alpha), softplus,
// leaky_relu (its negative slope) and linear. Float32 arithmetic for float32 or float16 tensors. The backward
// recomputes what it needs from the forward's input, so a layer keeps x and nothing else.
#pragma once

#include <library_types.h>  // cudaDataType_t
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

namespace cuda_plugin {

enum class Activation { linear, relu, relu6, sigmoid, tanh, gelu, swish, elu, softplus, leaky_relu };

// The activation of a graph-IR name; throws RAMJET_ERR_UNSUPPORTED naming it and the names there are.
Activation activation_named(const std::string& name);

// y = f(x), n elements. `alpha`: elu's alpha, leaky_relu's negative slope; unused by the others.
void activation_forward(Activation f, float alpha, const void* x, void* y, int64_t n, cudaDataType_t dtype,
                        cudaStream_t stream);
// dx = dy · f'(x).
void activation_backward(Activation f, float alpha, const void* x, const void* dy, void* dx, int64_t n,
                         cudaDataType_t dtype, cudaStream_t stream);

}  // namespace cuda_plugin
