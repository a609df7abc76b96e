// The graph's loss on the device: sparse_softmax_cross_entropy (integer labels against logits [..., classes]), the
// fused kernel of softmax_cross_entropy.hpp, with Keras's label smoothing and PyTorch's ignore_index; or mse, l1 and
// binary_cross_entropy against float targets of the input's shape (point_loss.hpp), or categorical_cross_entropy
// against float targets over the classes (categorical_loss.hpp).
#pragma once

#include "categorical_loss.hpp"
#include "layer.hpp"
#include "point_loss.hpp"
#include "softmax_cross_entropy.hpp"

#include <optional>

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

  // Checks the labels (int32 [batch, positions...], or float32 targets of the input's shape, on the CPU), uploads
  // them and computes the loss.
  LossValues forward(const DLTensor& labels);
  // Whether `correct` and `counted` mean anything: not for mse and l1, which have no right answer.
  bool counts_correct() const { return !point_ || *point_ == PointLoss::binary_cross_entropy; }
  // Writes d (scale × loss) / d logits into the logits' gradient.
  void backward(float scale);

 private:
  // The losses against float targets of the input's shape.
  LossValues targets_forward(const DLTensor& targets);

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
  std::optional<PointLoss> point_;  // mse, l1, binary_cross_entropy
  bool categorical_ = false;        // categorical_cross_entropy
  Buffer targets_;
  Buffer row_loss_, row_hit_;       // categorical: per row
};

}  // namespace cuda_plugin
