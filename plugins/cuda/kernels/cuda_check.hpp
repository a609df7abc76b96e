// CUDA runtime failures as ramjet errors that name the call: "cudaMemcpyAsync (optimizer slots): an illegal
// memory access was encountered". The runtime's own words come after ours, never alone.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace cuda_plugin {

// Throws ramjet::Error (RAMJET_ERR_OUT_OF_MEMORY for cudaErrorMemoryAllocation, else RAMJET_ERR_DEVICE) naming
// `call` and, when given, what it was for.
void check(cudaError_t status, const char* call, const std::string& purpose = {});

// How many CUDA devices this process sees. Throws RAMJET_ERR_DEVICE "no CUDA device: ..." when none (no GPU, no
// driver, CUDA_VISIBLE_DEVICES empty), with the runtime's reason.
int require_devices();

}  // namespace cuda_plugin
