#include "caching_allocator.hpp"
#include "cuda_check.hpp"

#include <cuda_runtime_api.h>

namespace cuda_plugin {

DeviceCalls cuda_device_calls() {
  return {[](size_t bytes) -> void* {
            void* block = nullptr;
            const cudaError_t status = cudaMalloc(&block, bytes);
            if (status == cudaErrorMemoryAllocation) {
              cudaGetLastError();  // not sticky, but the runtime remembers it as the thread's last error
              return nullptr;
            }
            check(status, "cudaMalloc", bytes_text(bytes));
            return block;
          },
          [](void* block) { cudaFree(block); }};
}

}  // namespace cuda_plugin
