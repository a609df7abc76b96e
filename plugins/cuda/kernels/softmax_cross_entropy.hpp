// The token- or example-level softmax cross-entropy with integer labels, fused on the GPU: for each row of logits,
// the loss from the log-sum-exp (label smoothing as Keras's: targets (1 − ε)·one-hot + ε / classes), whether the
// label is the arg-max (the first, on ties), and the gradient with respect to the logits, (softmax − targets) ×
// scale / counted, where counted is the rows whose label is not ignored (negative). Float32 arithmetic whatever the
// logits' dtype (float32 or float16); the batch's loss is summed in a fixed order, so it is the same every run.
#pragma once

#include <library_types.h>  // cudaDataType_t
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

namespace cuda_plugin {

// What one call leaves in device memory for the host to read after the stream has run.
struct CrossEntropyResult {
  float loss;          // mean over counted rows (0 when none)
  int32_t correct;     // counted rows whose label is the arg-max
  int32_t counted;     // rows with a label >= 0
  int32_t bad_row;     // the first row whose label is >= classes, or -1
  int32_t bad_label;
};

class SoftmaxCrossEntropy {
 public:
  // `logits_dtype`: CUDA_R_32F or CUDA_R_16F, also the gradient's. Allocates its scratch (rows floats and ints).
  SoftmaxCrossEntropy(int64_t rows, int64_t classes, float label_smoothing, cudaDataType_t logits_dtype);
  ~SoftmaxCrossEntropy();
  SoftmaxCrossEntropy(const SoftmaxCrossEntropy&) = delete;
  SoftmaxCrossEntropy& operator=(const SoftmaxCrossEntropy&) = delete;

  // Enqueues the loss into `result` (device memory) and, when `gradient` is not null, the gradient scaled by
  // `scale` (the loss scale, 1 without one).
  void run(const void* logits, const int32_t* labels, void* gradient, float scale, CrossEntropyResult* result,
           cudaStream_t stream) const;

  // Reads `result` (after the stream has run) and throws RAMJET_ERR_INVALID_ARGUMENT naming the row and the label
  // when a label was out of range.
  static CrossEntropyResult read(const CrossEntropyResult* result, const std::string& loss_name);

 private:
  int64_t rows_, classes_;
  float smoothing_;
  cudaDataType_t dtype_;
  float* row_loss_ = nullptr;
  int32_t* row_hit_ = nullptr;
};

}  // namespace cuda_plugin
