#include "loss.hpp"

#include "cuda_check.hpp"

#include <ramjet/sdk/dtype.hpp>
#include <ramjet/sdk/tensor.hpp>

#include <algorithm>
#include <cstring>

namespace cuda_plugin {

Loss::Loss(const ramjet::ir::LossSpec& spec, Device& device, Value& logits, int64_t batch, cudaDataType_t dtype)
    : spec_(spec), device_(device), logits_(logits), dtype_(dtype) {
  categorical_ = spec.op == "categorical_cross_entropy";
  if (spec.op == "mse" || spec.op == "l1" || spec.op == "binary_cross_entropy" || categorical_) {
    if (categorical_ && logits.shape.empty())
      throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "graph: #/loss: " + spec.op + " needs logits [..., classes], "
                                                           "but '" + logits.name + "' has shape " +
                                                           ramjet::ir::shape_string(logits.shape));
    if (!categorical_)
      point_ = spec.op == "mse" ? PointLoss::mse : spec.op == "l1" ? PointLoss::l1 : PointLoss::binary_cross_entropy;
    label_shape_ = {batch};
    label_shape_.insert(label_shape_.end(), logits.shape.begin(), logits.shape.end());
    targets_ = Buffer(device, static_cast<size_t>(logits.elements) * sizeof(float), "the loss's targets");
    result_ = Buffer(device, std::max(sizeof(PointLossResult), sizeof(RowLossResult)), "the loss's result");
    if (categorical_) {
      rows_ = logits.elements / logits.shape.back();
      row_loss_ = Buffer(device, static_cast<size_t>(rows_) * sizeof(float), "the loss's rows");
      row_hit_ = Buffer(device, static_cast<size_t>(rows_) * sizeof(int32_t), "the loss's rows");
    }
    return;
  }
  if (spec.op != "sparse_softmax_cross_entropy")
    throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, "graph: #/loss: the cuda backend does not support loss '" + spec.op + "'");
  if (logits.shape.empty())
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "graph: #/loss: " + spec.op + " needs logits [..., classes], but '" +
                                                         logits.name + "' has shape " +
                                                         ramjet::ir::shape_string(logits.shape));
  const int64_t classes = logits.shape.back();
  rows_ = logits.elements / classes;
  label_shape_ = {batch};
  label_shape_.insert(label_shape_.end(), logits.shape.begin(), logits.shape.end() - 1);
  host_labels_.resize(static_cast<size_t>(rows_));
  labels_ = Buffer(device, static_cast<size_t>(rows_) * sizeof(int32_t), "the loss's labels");
  result_ = Buffer(device, sizeof(CrossEntropyResult), "the loss's result");
  kernel_ = std::make_unique<SoftmaxCrossEntropy>(rows_, classes, static_cast<float>(spec.label_smoothing), dtype);
}

LossValues Loss::targets_forward(const DLTensor& targets) {
  const bool shaped = targets.ndim == static_cast<int32_t>(label_shape_.size()) &&
                      std::equal(label_shape_.begin(), label_shape_.end(), targets.shape);
  if (!shaped || targets.device.device_type != kDLCPU || !ramjet::same_dtype(targets.dtype, ramjet::dtype_of<float>()) ||
      !ramjet::is_contiguous(targets))
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "forward: labels '" + spec_.labels + "' must be a contiguous float32 "
                                                         "CPU tensor of shape " + ramjet::ir::shape_string(label_shape_) +
                                                         " (the shape of '" + logits_.name + "'), the " + spec_.op +
                                                         " targets");
  check(cudaMemcpyAsync(targets_.get(), static_cast<const char*>(targets.data) + targets.byte_offset, targets_.bytes(),
                        cudaMemcpyHostToDevice, device_.stream()),
        "cudaMemcpyAsync", "targets");
  if (categorical_) {
    categorical_forward(logits_.data.get(), targets_.as<float>(), rows_, logits_.shape.back(),
                        static_cast<float>(spec_.label_smoothing), dtype_, row_loss_.as<float>(), row_hit_.as<int32_t>(),
                        result_.as<RowLossResult>(), device_.stream());
    RowLossResult r{};
    check(cudaMemcpyAsync(&r, result_.get(), sizeof r, cudaMemcpyDeviceToHost, device_.stream()), "cudaMemcpyAsync",
          "the loss");
    device_.wait("the loss");
    return {r.loss, r.correct, static_cast<int32_t>(rows_)};
  }
  point_loss_forward(*point_, logits_.data.get(), targets_.as<float>(), logits_.elements, dtype_,
                     result_.as<PointLossResult>(), device_.stream());
  PointLossResult r{};
  check(cudaMemcpyAsync(&r, result_.get(), sizeof r, cudaMemcpyDeviceToHost, device_.stream()), "cudaMemcpyAsync",
        "the loss");
  device_.wait("the loss");
  return {r.loss, r.correct, static_cast<int32_t>(logits_.elements)};
}

LossValues Loss::forward(const DLTensor& labels) {
  if (point_ || categorical_) return targets_forward(labels);
  const bool shaped = labels.ndim == static_cast<int32_t>(label_shape_.size()) &&
                      std::equal(label_shape_.begin(), label_shape_.end(), labels.shape);
  if (!shaped || labels.device.device_type != kDLCPU || !ramjet::same_dtype(labels.dtype, ramjet::dtype_of<int32_t>()) ||
      !ramjet::is_contiguous(labels))
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "forward: labels '" + spec_.labels +
                                                         "' must be a contiguous int32 CPU tensor of shape " +
                                                         ramjet::ir::shape_string(label_shape_));
  std::memcpy(host_labels_.data(), static_cast<const char*>(labels.data) + labels.byte_offset,
              host_labels_.size() * sizeof(int32_t));
  // The kernel skips negative labels: ignore_label becomes one. Labels outside the classes are refused here, before
  // anything runs, as the cpu backend refuses them.
  const int64_t classes = logits_.shape.back();
  for (size_t i = 0; i < host_labels_.size(); ++i) {
    int32_t& l = host_labels_[i];
    if (spec_.ignore_label && l == *spec_.ignore_label) l = -1;
    else if (l < 0 || l >= classes)
      throw ramjet::Error(RAMJET_ERR_OUT_OF_RANGE, "forward: labels '" + spec_.labels + "' [" + std::to_string(i) +
                                                       "] = " + std::to_string(l) + " is outside [0, " +
                                                       std::to_string(classes) + ")");
  }
  check(cudaMemcpyAsync(labels_.get(), host_labels_.data(), host_labels_.size() * sizeof(int32_t),
                        cudaMemcpyHostToDevice, device_.stream()),
        "cudaMemcpyAsync", "labels");
  kernel_->run(logits_.data.get(), labels_.as<int32_t>(), nullptr, 1.0f, result_.as<CrossEntropyResult>(),
               device_.stream());
  device_.wait("the loss");
  const CrossEntropyResult r = SoftmaxCrossEntropy::read(result_.as<CrossEntropyResult>(), "loss '" + spec_.op + "'");
  return {r.loss, r.correct, r.counted};
}

void Loss::backward(float scale) {
  if (!logits_.wants_grad) return;  // no parameter lies upstream: nothing to back-propagate
  if (categorical_) {
    categorical_backward(logits_.data.get(), targets_.as<float>(), logits_.grad.get(), rows_, logits_.shape.back(),
                         static_cast<float>(spec_.label_smoothing), scale, dtype_, device_.stream());
    logits_.grad_written = true;
    return;
  }
  if (point_) {
    point_loss_backward(*point_, logits_.data.get(), targets_.as<float>(), logits_.grad.get(), logits_.elements, scale,
                        dtype_, device_.stream());
    logits_.grad_written = true;
    return;
  }
  kernel_->run(logits_.data.get(), labels_.as<int32_t>(), logits_.grad.get(), scale, result_.as<CrossEntropyResult>(),
               device_.stream());
  logits_.grad_written = true;
}

}  // namespace cuda_plugin
