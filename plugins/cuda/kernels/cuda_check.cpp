#include "cuda_check.hpp"

#include <ramjet/sdk/error.hpp>

#include <dlfcn.h>

namespace cuda_plugin {

void check(cudaError_t status, const char* call, const std::string& purpose) {
  if (status == cudaSuccess) return;
  std::string message = call;
  if (!purpose.empty()) message += " (" + purpose + ")";
  message += ": ";
  message += cudaGetErrorString(status);
  throw ramjet::Error(status == cudaErrorMemoryAllocation ? RAMJET_ERR_OUT_OF_MEMORY : RAMJET_ERR_DEVICE, message);
}

int require_devices() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear it: the runtime keeps a sticky "last error" per thread
    // Without a driver at all the runtime says its driver is "insufficient"; say what is missing instead.
    void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (driver == nullptr)
      throw ramjet::Error(RAMJET_ERR_DEVICE, "no CUDA device: no NVIDIA driver is installed (libcuda.so.1 not found)");
    dlclose(driver);
    throw ramjet::Error(RAMJET_ERR_DEVICE, std::string("no CUDA device: ") + cudaGetErrorString(status));
  }
  if (count == 0) throw ramjet::Error(RAMJET_ERR_DEVICE, "no CUDA device: the driver reports none");
  return count;
}

}  // namespace cuda_plugin
