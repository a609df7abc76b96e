// Fused optimizer updates over every parameter at once (one kernel launch a step, not one per tensor), and the
// overflow check dynamic loss scaling needs, on float32 master weights, gradients and slots in device memory.
// The arithmetic is the cpu backend's (plugins/onednn/optimizer.cpp: Keras's rules), operation for operation, so
// a parameter updated here and there differs only by rounding (the GPU contracts a*b+c into one FMA).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

namespace cuda_plugin {

// One trainable parameter: its device buffers. `slot0`/`slot1` are SGD's velocity (momentum > 0) or Adam's m and
// v; unused ones are null. `decay`: AdamW decays this one (rank >= 2 unless decay_all).
struct ParameterBuffers {
  float* value = nullptr;
  const float* gradient = nullptr;
  float* slot0 = nullptr;
  float* slot1 = nullptr;
  int64_t count = 0;
  bool decay = true;
};

enum class UpdateRule { sgd, sgd_momentum, adam, adamw };

// One step's numbers, from the optimizer's settings and ramjet_update_args.
struct UpdateStep {
  UpdateRule rule = UpdateRule::sgd;
  float learning_rate = 0, gradient_scale = 1, weight_decay = 0;
  float momentum = 0;
  bool nesterov = false;
  double beta_1 = 0.9, beta_2 = 0.999, epsilon = 1e-7;
  int64_t step = 1;  // 1-based: Adam's bias correction
};

// The parameter set of one program, uploaded once as a table of fixed-size chunks so that one launch covers all
// of them. Owns its device tables (freed in the destructor); the buffers it points to stay the caller's.
class MultiTensor {
 public:
  explicit MultiTensor(const std::vector<ParameterBuffers>& parameters);
  ~MultiTensor();
  MultiTensor(const MultiTensor&) = delete;
  MultiTensor& operator=(const MultiTensor&) = delete;

  // Enqueues one update of every parameter on `stream`.
  void update(const UpdateStep& step, cudaStream_t stream) const;
  // Enqueues a check of every gradient; `device_flag` (an int in device memory) becomes 1 if any element is inf
  // or NaN. The caller zeroes it first and reads it after the stream has run.
  void find_nonfinite(int* device_flag, cudaStream_t stream) const;
  // The same for parameter `tensor` alone (its index in the constructor's list).
  void find_nonfinite(int tensor, int* device_flag, cudaStream_t stream) const;

  int chunk_count() const { return chunks_; }

 private:
  void* tensors_ = nullptr;  // ParameterBuffers[n] on the device
  void* chunks_table_ = nullptr;
  int chunks_ = 0;
  std::vector<int> first_chunk_;  // each tensor's first chunk in the table, and the chunk count last
};

}  // namespace cuda_plugin
