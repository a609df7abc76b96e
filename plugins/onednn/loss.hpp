// Losses, each the mean over the batch: sparse_softmax_cross_entropy (int32 class labels [N] against logits
// [N, K]), mse and l1 (float32 targets of the output's shape, averaged over every element, as Keras does for
// equal-sized examples).
#pragma once

#include "edge.hpp"

#include <string_view>

namespace onednn {

bool is_supported_loss(std::string_view op);

class Loss {
 public:
  Loss(const LossSpec& spec, LayerBuilder& builder, Value& input);

  const LossSpec& spec() const { return spec_; }
  bool counts_correct() const { return kind_ == Kind::cross_entropy; }
  // Checks and keeps the labels (backward reads them), then computes the loss and, for the cross-entropy, how many
  // argmax(logits) equal the label.
  void forward(const Exec& exec, const DLTensor& labels, float& loss, int32_t& correct);
  // d (scale * loss) / d input.
  void backward(const Exec& exec, float scale);

 private:
  enum class Kind { cross_entropy, mse, l1 };
  void take_labels(const DLTensor& labels);

  LossSpec spec_;
  Kind kind_;
  Edge in_;
  int64_t batch_ = 0, width_ = 0;  // rows and elements per row
  std::vector<int32_t> classes_;   // cross-entropy labels
  std::vector<float> targets_;     // mse / l1 targets
  std::vector<float> probs_;       // cross-entropy: softmax of the logits, kept for backward
};

}  // namespace onednn
