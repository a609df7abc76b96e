#include "cuda_check.hpp"

#include <ramjet/sdk/cuda_driver.hpp>
#include <ramjet/sdk/error.hpp>

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
    throw ramjet::Error(RAMJET_ERR_DEVICE, ramjet::no_cuda_device(cudaGetErrorString(status)));
  }
  if (count == 0) throw ramjet::Error(RAMJET_ERR_DEVICE, "no CUDA device: the driver reports none");
  return count;
}

}  // namespace cuda_plugin
