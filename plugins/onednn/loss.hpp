// Losses, each a mean (Keras's and PyTorch's "mean" reduction):
//  sparse_softmax_cross_entropy  int32 class labels against logits [..., K]: one class per position ([N] for
//                                logits [N, K], [N, T] for a sequence's [N, T, K]), averaged over the positions
//                                counted (those whose label is not ignore_label, as PyTorch's ignore_index);
//                                label_smoothing ε mixes the one-hot target with the uniform one, (1 − ε) y + ε / K
//  categorical_cross_entropy     float32 targets (one-hot or soft) of the logits' shape, with the same smoothing
//  binary_cross_entropy          float32 targets in [0, 1] against logits of any shape, per element
//  mse, l1                       float32 targets of the output's shape, averaged over every element
// The classification losses also count, per batch, the positions whose top prediction is right (`correct`: for
// binary, logit > 0 against target > 0.5) and how many positions were counted (`counted`).
#pragma once

#include "edge.hpp"

#include <string_view>

namespace onednn {

std::vector<std::string> supported_losses();

class Loss {
 public:
  Loss(const LossSpec& spec, LayerBuilder& builder, Value& input);

  const LossSpec& spec() const { return spec_; }
  bool counts_correct() const { return kind_ != Kind::mse && kind_ != Kind::l1; }
  // Checks and keeps the labels (backward reads them), then computes the loss and, for the classification losses,
  // how many positions the model gets right out of how many count.
  void forward(const Exec& exec, const DLTensor& labels, float& loss, int32_t& correct, int32_t& counted);
  // d (scale * loss) / d input.
  void backward(const Exec& exec, float scale);

 private:
  enum class Kind { sparse, categorical, binary, mse, l1 };
  void take_labels(const DLTensor& labels);
  float classes_forward(const float* x, int64_t& hits);
  float elementwise_forward(const float* x, int64_t& hits);

  LossSpec spec_;
  Kind kind_;
  Edge in_;
  int64_t batch_ = 0;
  int64_t rows_ = 0, classes_ = 0;  // the cross-entropies over classes: positions and classes per position
  int64_t elements_ = 0;            // every element of the batch's output
  int64_t counted_ = 0;             // positions (or elements) the last forward counted
  std::vector<int32_t> labels_;     // sparse class labels, per position
  std::vector<float> targets_;      // float targets
  std::vector<float> probs_;        // softmax (or sigmoid) of the logits, kept for backward
};

}  // namespace onednn
