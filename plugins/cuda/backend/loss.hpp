// The graph's loss on the device: sparse_softmax_cross_entropy (integer labels against logits [..., classes]), the
// fused kernel of softmax_cross_entropy.hpp, with Keras's label smoothing and PyTorch's ignore_index.
#pragma once

#include "layer.hpp"
#include "softmax_cross_entropy.hpp"

#include <ramjet/sdk/graph_ir.hpp>

#include <dlpack/dlpack.h>

namespace cuda_plugin {

struct LossValues {
  float loss = 0;  // mean over the counted positions, before loss scaling
  int32_t correct = 0;
  int32_t counted = 0;
};

class Loss {
 public:
  Loss(const ramjet::ir::LossSpec& spec, Device& device, Value& logits, int64_t batch, cudaDataType_t dtype);

  // Checks the labels (int32 [batch, positions...] on the CPU), uploads them and computes the loss.
  LossValues forward(const DLTensor& labels);
  // Writes d (scale × loss) / d logits into the logits' gradient.
  void backward(float scale);

 private:
  ramjet::ir::LossSpec spec_;
  Device& device_;
  Value& logits_;
  cudaDataType_t dtype_;
  Shape label_shape_;  // [batch, positions...]
  int64_t rows_ = 0;
  std::vector<int32_t> host_labels_;
  Buffer labels_;
  Buffer result_;
  std::unique_ptr<SoftmaxCrossEntropy> kernel_;
};

}  // namespace cuda_plugin
