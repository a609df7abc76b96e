// Device buffers for the GPU tests, made from and read back into float host vectors: float32, or float16 with the
// host values rounded in place to what the device holds (so a reference computed from them sees the same inputs).
// Every buffer is freed when the object goes.
#pragma once

#include "cuda_check.hpp"

#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <vector>

namespace ramjet::test {

class DeviceBuffers {
 public:
  explicit DeviceBuffers(bool half) : half_(half) {}
  ~DeviceBuffers() {
    for (void* p : owned_) cudaFree(p);
  }
  DeviceBuffers(const DeviceBuffers&) = delete;
  DeviceBuffers& operator=(const DeviceBuffers&) = delete;

  size_t element() const { return half_ ? 2 : 4; }
  // `host` on the device; for float16, `host` is left holding the rounded values.
  void* upload(std::vector<float>& host) {
    void* p = empty(host.size());
    if (half_) {
      std::vector<__half> h(host.size());
      for (size_t i = 0; i < host.size(); ++i) h[i] = __float2half(host[i]), host[i] = __half2float(h[i]);
      cuda_plugin::check(cudaMemcpy(p, h.data(), h.size() * 2, cudaMemcpyHostToDevice), "cudaMemcpy");
    } else {
      cuda_plugin::check(cudaMemcpy(p, host.data(), host.size() * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
    }
    return p;
  }
  // Room for `n` elements (at least one byte).
  void* empty(size_t n) { return bytes(n * element()); }
  void* bytes(size_t n) {
    void* p = nullptr;
    cuda_plugin::check(cudaMalloc(&p, n > 0 ? n : 1), "cudaMalloc");
    owned_.push_back(p);
    return p;
  }
  std::vector<float> download(const void* p, size_t n) const {
    std::vector<float> out(n);
    if (half_) {
      std::vector<__half> h(n);
      cuda_plugin::check(cudaMemcpy(h.data(), p, n * 2, cudaMemcpyDeviceToHost), "cudaMemcpy");
      for (size_t i = 0; i < n; ++i) out[i] = __half2float(h[i]);
    } else {
      cuda_plugin::check(cudaMemcpy(out.data(), p, n * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
    }
    return out;
  }

 private:
  bool half_;
  std::vector<void*> owned_;
};

}  // namespace ramjet::test
