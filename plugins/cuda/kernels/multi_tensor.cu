#include "cuda_check.hpp"
#include "multi_tensor.hpp"

#include <ramjet/sdk/error.hpp>

#include <algorithm>
#include <cmath>

namespace cuda_plugin {
namespace {

// Elements one block updates: large enough to amortise a block's start, small enough that a 100-parameter model
// still fills an H100's 132 SMs.
constexpr int64_t kChunk = 16384;
constexpr int kThreads = 256;

struct Chunk {
  int32_t tensor;
  int64_t begin, end;
};

struct Constants {
  float lr, gs, l2, decay, mu, b1, b2, c1, c2, eps, alpha;
  int nesterov;
};

template <UpdateRule Rule>
__global__ void update_kernel(const ParameterBuffers* tensors, const Chunk* chunks, Constants k) {
  const Chunk c = chunks[blockIdx.x];
  const ParameterBuffers p = tensors[c.tensor];
  for (int64_t i = c.begin + threadIdx.x; i < c.end; i += blockDim.x) {
    float w = p.value[i];
    if constexpr (Rule == UpdateRule::sgd) {
      w -= k.lr * (p.gradient[i] * k.gs + k.l2 * w);
    } else if constexpr (Rule == UpdateRule::sgd_momentum) {
      const float g = p.gradient[i] * k.gs + k.l2 * w;
      const float v = k.mu * p.slot0[i] - k.lr * g;
      p.slot0[i] = v;
      w += k.nesterov ? k.mu * v - k.lr * g : v;
    } else {
      if (Rule == UpdateRule::adamw && p.decay) w -= k.decay * w;
      const float g = p.gradient[i] * k.gs + k.l2 * w;
      const float m = k.b1 * p.slot0[i] + k.c1 * g;
      const float v = k.b2 * p.slot1[i] + k.c2 * g * g;
      p.slot0[i] = m;
      p.slot1[i] = v;
      w -= k.alpha * m / (sqrtf(v) + k.eps);
    }
    p.value[i] = w;
  }
}

__global__ void nonfinite_kernel(const ParameterBuffers* tensors, const Chunk* chunks, int* flag) {
  const Chunk c = chunks[blockIdx.x];
  const float* g = tensors[c.tensor].gradient;
  bool bad = false;
  for (int64_t i = c.begin + threadIdx.x; i < c.end; i += blockDim.x) bad |= !isfinite(g[i]);
  // One write per block at most: a warp vote, then the warps that saw one.
  if (__any_sync(0xffffffffu, bad) && (threadIdx.x % 32) == 0) *flag = 1;
}

}  // namespace

MultiTensor::MultiTensor(const std::vector<ParameterBuffers>& parameters) {
  std::vector<Chunk> table;
  for (size_t t = 0; t < parameters.size(); ++t) {
    first_chunk_.push_back(static_cast<int>(table.size()));
    for (int64_t b = 0; b < parameters[t].count; b += kChunk)
      table.push_back({static_cast<int32_t>(t), b, std::min(parameters[t].count, b + kChunk)});
  }
  chunks_ = static_cast<int>(table.size());
  first_chunk_.push_back(chunks_);
  if (parameters.empty()) return;
  check(cudaMalloc(&tensors_, parameters.size() * sizeof(ParameterBuffers)), "cudaMalloc", "the parameter table");
  try {
    check(cudaMalloc(&chunks_table_, table.size() * sizeof(Chunk)), "cudaMalloc", "the chunk table");
    check(cudaMemcpy(tensors_, parameters.data(), parameters.size() * sizeof(ParameterBuffers),
                     cudaMemcpyHostToDevice), "cudaMemcpy", "the parameter table");
    check(cudaMemcpy(chunks_table_, table.data(), table.size() * sizeof(Chunk), cudaMemcpyHostToDevice), "cudaMemcpy",
          "the chunk table");
    // A copy from pageable memory may return before its DMA ends, and a non-blocking stream does not wait for the
    // legacy stream: finish it here, once, before any stream reads the tables.
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize", "the parameter tables");
  } catch (...) {
    cudaFree(chunks_table_);
    cudaFree(tensors_);
    throw;
  }
}

MultiTensor::~MultiTensor() {
  cudaFree(chunks_table_);
  cudaFree(tensors_);
}

void MultiTensor::update(const UpdateStep& s, cudaStream_t stream) const {
  if (chunks_ == 0) return;
  if (s.step < 1) throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "optimizer update: step must be >= 1 (1-based)");
  Constants k{};
  k.lr = s.learning_rate;
  k.gs = s.gradient_scale;
  k.mu = s.momentum;
  k.nesterov = s.nesterov ? 1 : 0;
  const bool decoupled = s.rule == UpdateRule::adamw;
  k.l2 = decoupled ? 0.0f : s.weight_decay;
  k.decay = decoupled ? s.learning_rate * s.weight_decay : 0.0f;
  k.b1 = static_cast<float>(s.beta_1);
  k.b2 = static_cast<float>(s.beta_2);
  // As the cpu backend: 1 - beta in double, the bias correction folded into the step size.
  k.c1 = static_cast<float>(1.0 - s.beta_1);
  k.c2 = static_cast<float>(1.0 - s.beta_2);
  k.eps = static_cast<float>(s.epsilon);
  const double t = static_cast<double>(s.step);
  k.alpha = static_cast<float>(s.learning_rate * std::sqrt(1.0 - std::pow(s.beta_2, t)) / (1.0 - std::pow(s.beta_1, t)));
  const auto* tensors = static_cast<const ParameterBuffers*>(tensors_);
  const auto* chunks = static_cast<const Chunk*>(chunks_table_);
  switch (s.rule) {
    case UpdateRule::sgd: update_kernel<UpdateRule::sgd><<<chunks_, kThreads, 0, stream>>>(tensors, chunks, k); break;
    case UpdateRule::sgd_momentum:
      update_kernel<UpdateRule::sgd_momentum><<<chunks_, kThreads, 0, stream>>>(tensors, chunks, k);
      break;
    case UpdateRule::adam: update_kernel<UpdateRule::adam><<<chunks_, kThreads, 0, stream>>>(tensors, chunks, k); break;
    case UpdateRule::adamw: update_kernel<UpdateRule::adamw><<<chunks_, kThreads, 0, stream>>>(tensors, chunks, k); break;
  }
  check(cudaGetLastError(), "optimizer update kernel launch");
}

void MultiTensor::find_nonfinite(int* device_flag, cudaStream_t stream) const {
  if (chunks_ == 0) return;
  nonfinite_kernel<<<chunks_, kThreads, 0, stream>>>(static_cast<const ParameterBuffers*>(tensors_),
                                                      static_cast<const Chunk*>(chunks_table_), device_flag);
  check(cudaGetLastError(), "non-finite check kernel launch");
}

void MultiTensor::find_nonfinite(int tensor, int* device_flag, cudaStream_t stream) const {
  if (tensor < 0 || tensor + 1 >= static_cast<int>(first_chunk_.size()))
    throw ramjet::Error(RAMJET_ERR_INTERNAL, "non-finite check: no tensor " + std::to_string(tensor));
  const int first = first_chunk_[static_cast<size_t>(tensor)];
  const int count = first_chunk_[static_cast<size_t>(tensor) + 1] - first;
  if (count == 0) return;
  nonfinite_kernel<<<count, kThreads, 0, stream>>>(static_cast<const ParameterBuffers*>(tensors_),
                                                    static_cast<const Chunk*>(chunks_table_) + first, device_flag);
  check(cudaGetLastError(), "non-finite check kernel launch");
}

}  // namespace cuda_plugin
