// What a batch_norm node asks for, read and checked in one place for both of the layers that run it: oneDNN's
// primitive (batch_norm.cpp) and the float32 kernels with a relu6 fused in (batch_norm_clip.cpp).
#pragma once

#include "../layer.hpp"
#include "../parameters.hpp"

namespace onednn {

struct BatchNormSpec {
  float epsilon = 1e-3f;
  float momentum = 0.99f;
  Param* gamma = nullptr;
  Param* beta = nullptr;
  Param* moving_mean = nullptr;
  Param* moving_variance = nullptr;
};

// One input of rank 1 ([C]) or 3 ([H, W, C]), epsilon > 0, momentum in [0, 1], and the four parameters of shape [C].
BatchNormSpec read_batch_norm(const NodeSpec& node, LayerBuilder& builder);

// After a training forward: the moving statistics move toward the batch's by (1 - momentum), as Keras's.
void move_statistics(const BatchNormSpec& spec, const float* batch_mean, const float* batch_variance);

}  // namespace onednn
