// The cuda plugin's first kernels against the cpu backend's rules, on a GPU when there is one: the fused
// multi-tensor optimizer updates (SGD, momentum and Nesterov, Adam, AdamW with its decay mask) and the overflow
// check that dynamic loss scaling reads. Without a device those cases are skipped with the runtime's reason (a
// skip is not a pass); the error reporting is checked everywhere.
#include "cuda_check.hpp"
#include "multi_tensor.hpp"
#include "require_gpu.hpp"

#include <ramjet/sdk/error.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace cuda_plugin;

namespace {

TEST(CudaCheck, NamesTheCallAndWhatItWasFor) {
  try {
    check(cudaErrorMemoryAllocation, "cudaMalloc", "layer dense_1, 4096 bytes");
    FAIL() << "no throw";
  } catch (const ramjet::Error& e) {
    EXPECT_EQ(e.status(), RAMJET_ERR_OUT_OF_MEMORY);
    EXPECT_EQ(std::string(e.what()), "cudaMalloc (layer dense_1, 4096 bytes): out of memory");
  }
  try {
    check(cudaErrorIllegalAddress, "cudaMemcpyAsync");
    FAIL() << "no throw";
  } catch (const ramjet::Error& e) {
    EXPECT_EQ(e.status(), RAMJET_ERR_DEVICE);
    EXPECT_EQ(std::string(e.what()).rfind("cudaMemcpyAsync: ", 0), 0u) << e.what();
  }
  EXPECT_NO_THROW(check(cudaSuccess, "cudaFree"));
}

TEST(CudaDevice, ADeviceIsFoundOrItsAbsenceIsNamed) {
  int count = 0;
  if (cudaGetDeviceCount(&count) == cudaSuccess && count > 0) {
    cudaGetLastError();
    EXPECT_EQ(require_devices(), count);
    return;
  }
  cudaGetLastError();
  try {
    require_devices();
    FAIL() << "no device, yet no error";
  } catch (const ramjet::Error& e) {
    EXPECT_EQ(e.status(), RAMJET_ERR_DEVICE);
    EXPECT_EQ(std::string(e.what()).rfind("no CUDA device: ", 0), 0u) << e.what();
  }
}

// Device copies of host vectors, freed at the end of the test.
class DeviceVectors {
 public:
  ~DeviceVectors() {
    for (void* p : owned_) cudaFree(p);
  }
  float* upload(const std::vector<float>& host) {
    void* p = nullptr;
    check(cudaMalloc(&p, host.size() * sizeof(float)), "cudaMalloc");
    owned_.push_back(p);
    check(cudaMemcpy(p, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
    return static_cast<float*>(p);
  }
  static std::vector<float> download(const float* device, size_t n) {
    std::vector<float> host(n);
    check(cudaMemcpy(host.data(), device, n * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
    return host;
  }

 private:
  std::vector<void*> owned_;
};

struct HostParameter {
  std::vector<float> value, gradient, slot0, slot1;
  bool decay;
};

// The cpu backend's rules (plugins/onednn/optimizer.cpp), written again in plain float for the comparison.
void reference_update(HostParameter& p, const UpdateStep& s) {
  const float lr = s.learning_rate, gs = s.gradient_scale, mu = s.momentum;
  const bool decoupled = s.rule == UpdateRule::adamw;
  const float l2 = decoupled ? 0.0f : s.weight_decay;
  const float decay = decoupled && p.decay ? lr * s.weight_decay : 0.0f;
  const double t = static_cast<double>(s.step);
  const float alpha = static_cast<float>(lr * std::sqrt(1.0 - std::pow(s.beta_2, t)) / (1.0 - std::pow(s.beta_1, t)));
  const float b1 = static_cast<float>(s.beta_1), b2 = static_cast<float>(s.beta_2);
  const float c1 = static_cast<float>(1.0 - s.beta_1), c2 = static_cast<float>(1.0 - s.beta_2);
  const float eps = static_cast<float>(s.epsilon);
  for (size_t i = 0; i < p.value.size(); ++i) {
    float& w = p.value[i];
    switch (s.rule) {
      case UpdateRule::sgd: w -= lr * (p.gradient[i] * gs + l2 * w); break;
      case UpdateRule::sgd_momentum: {
        const float g = p.gradient[i] * gs + l2 * w;
        p.slot0[i] = mu * p.slot0[i] - lr * g;
        w += s.nesterov ? mu * p.slot0[i] - lr * g : p.slot0[i];
        break;
      }
      case UpdateRule::adam:
      case UpdateRule::adamw: {
        w -= decay * w;
        const float g = p.gradient[i] * gs + l2 * w;
        p.slot0[i] = b1 * p.slot0[i] + c1 * g;
        p.slot1[i] = b2 * p.slot1[i] + c2 * g * g;
        w -= alpha * p.slot0[i] / (std::sqrt(p.slot1[i]) + eps);
        break;
      }
    }
  }
}

std::vector<HostParameter> random_parameters() {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  // A scalar, a small vector, and one that spans three 16384-element chunks (the last partial).
  std::vector<HostParameter> out;
  for (size_t n : {size_t{1}, size_t{37}, size_t{40000}}) {
    HostParameter p;
    for (size_t i = 0; i < n; ++i) {
      p.value.push_back(normal(rng));
      p.gradient.push_back(normal(rng) * 64.0f);  // as if the loss had been scaled by 64
    }
    p.slot0.assign(n, 0.0f);
    p.slot1.assign(n, 0.0f);
    p.decay = n > 1;
    out.push_back(p);
  }
  return out;
}

void expect_close(const std::vector<float>& gpu, const std::vector<float>& cpu, const std::string& what) {
  ASSERT_EQ(gpu.size(), cpu.size());
  double worst = 0;
  for (size_t i = 0; i < gpu.size(); ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(gpu[i]) - cpu[i]) / std::max(1.0, std::fabs(static_cast<double>(cpu[i]))));
  // FMA contraction on the GPU against separate multiply and add here: a few ulps after three steps.
  EXPECT_LT(worst, 2e-6) << what;
}

class CudaMultiTensorRules : public ::testing::TestWithParam<UpdateStep> {};

TEST_P(CudaMultiTensorRules, ThreeStepsMatchTheCpuRule) {
  RAMJET_REQUIRE_GPU();
  std::vector<HostParameter> host = random_parameters();
  DeviceVectors device;
  std::vector<ParameterBuffers> buffers;
  for (const auto& p : host)
    buffers.push_back({device.upload(p.value), device.upload(p.gradient), device.upload(p.slot0),
                       device.upload(p.slot1), static_cast<int64_t>(p.value.size()), p.decay});
  MultiTensor all(buffers);
  EXPECT_EQ(all.chunk_count(), 1 + 1 + 3);
  UpdateStep step = GetParam();
  for (int64_t t = 1; t <= 3; ++t) {
    step.step = t;
    all.update(step, nullptr);
    for (auto& p : host) reference_update(p, step);
  }
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  for (size_t k = 0; k < host.size(); ++k) {
    const size_t n = host[k].value.size();
    expect_close(DeviceVectors::download(buffers[k].value, n), host[k].value, "value " + std::to_string(k));
    expect_close(DeviceVectors::download(buffers[k].slot0, n), host[k].slot0, "slot0 " + std::to_string(k));
    expect_close(DeviceVectors::download(buffers[k].slot1, n), host[k].slot1, "slot1 " + std::to_string(k));
  }
}

UpdateStep rule(UpdateRule r, float weight_decay = 0, float momentum = 0, bool nesterov = false) {
  UpdateStep s;
  s.rule = r;
  s.learning_rate = 0.01f;
  s.gradient_scale = 1.0f / 64;
  s.weight_decay = weight_decay;
  s.momentum = momentum;
  s.nesterov = nesterov;
  return s;
}

std::string rule_name(const ::testing::TestParamInfo<UpdateStep>& info) {
  static const char* const names[] = {"sgd_l2", "momentum", "nesterov_l2", "adam", "adam_l2", "adamw"};
  return names[info.index];
}

INSTANTIATE_TEST_SUITE_P(Rules, CudaMultiTensorRules,
                         ::testing::Values(rule(UpdateRule::sgd, 1e-3f), rule(UpdateRule::sgd_momentum, 0, 0.9f),
                                           rule(UpdateRule::sgd_momentum, 1e-3f, 0.9f, true), rule(UpdateRule::adam),
                                           rule(UpdateRule::adam, 1e-2f), rule(UpdateRule::adamw, 0.1f)),
                         rule_name);

TEST(CudaMultiTensor, FindsAnInfOrNanInAnyChunkAndNothingInFiniteGradientsWholeOrTensorByTensor) {
  RAMJET_REQUIRE_GPU();
  std::vector<HostParameter> host = random_parameters();
  void* flag_memory = nullptr;
  check(cudaMalloc(&flag_memory, sizeof(int)), "cudaMalloc");
  int* flag = static_cast<int*>(flag_memory);
  // The flag after checking every tensor (checked < 0) or only tensor `checked`, with `bad` put into one gradient.
  auto flagged = [&](size_t tensor, size_t index, float bad, int checked = -1) {
    std::vector<HostParameter> h = host;
    if (tensor < h.size()) h[tensor].gradient[index] = bad;
    DeviceVectors device;
    std::vector<ParameterBuffers> buffers;
    for (const auto& p : h)
      buffers.push_back({device.upload(p.value), device.upload(p.gradient), nullptr, nullptr,
                         static_cast<int64_t>(p.value.size()), true});
    MultiTensor all(buffers);
    check(cudaMemset(flag, 0, sizeof(int)), "cudaMemset");
    if (checked < 0) all.find_nonfinite(flag, nullptr);
    else all.find_nonfinite(checked, flag, nullptr);
    int value = -1;
    check(cudaMemcpy(&value, flag, sizeof(int), cudaMemcpyDeviceToHost), "cudaMemcpy");
    return value;
  };
  EXPECT_EQ(flagged(99, 0, 0.0f), 0) << "all finite";
  EXPECT_EQ(flagged(0, 0, std::numeric_limits<float>::infinity()), 1) << "the scalar";
  EXPECT_EQ(flagged(2, 16384 * 2 + 100, -std::numeric_limits<float>::infinity()), 1) << "the third chunk";
  EXPECT_EQ(flagged(2, 16383, std::numeric_limits<float>::quiet_NaN()), 1) << "a chunk's last element";
  EXPECT_EQ(flagged(1, 36, std::numeric_limits<float>::max()), 0) << "large is not overflow";
  // One tensor at a time, as gradients are handed over during backward: only the poisoned one's check sees it.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(flagged(2, 16384 * 2 + 100, nan, 2), 1) << "the tensor with the NaN, its third chunk";
  for (int other : {0, 1}) EXPECT_EQ(flagged(2, 16384 * 2 + 100, nan, other), 0) << "tensor " << other;
  EXPECT_EQ(flagged(0, 0, nan, 0), 1) << "the scalar alone";
  EXPECT_THROW(flagged(0, 0, nan, static_cast<int>(host.size())), ramjet::Error) << "no such tensor";
  cudaFree(flag);
}

}  // namespace
