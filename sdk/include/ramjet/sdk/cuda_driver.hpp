// Whether an NVIDIA driver is installed at all, for GPU plugins' "no CUDA device" messages: without one, the CUDA
// runtime reports that its driver is "insufficient", which sends users looking for a driver update instead of a GPU.
// Needs no CUDA header: it only asks the loader for the driver library.
#ifndef RAMJET_SDK_CUDA_DRIVER_HPP
#define RAMJET_SDK_CUDA_DRIVER_HPP

#include <dlfcn.h>

#include <string>

namespace ramjet {

inline bool nvidia_driver_installed() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) return false;
  dlclose(driver);
  return true;
}

// "no CUDA device: <why>", `runtime_reason` being the CUDA runtime's words for its failure.
inline std::string no_cuda_device(const std::string& runtime_reason) {
  if (!nvidia_driver_installed()) return "no CUDA device: no NVIDIA driver is installed (libcuda.so.1 not found)";
  return "no CUDA device: " + runtime_reason;
}

}  // namespace ramjet

#endif  // RAMJET_SDK_CUDA_DRIVER_HPP
