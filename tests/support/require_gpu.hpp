// GPU test cases skip, with the runtime's reason, where no CUDA device is (a skip is never a pass: ctest and
// `./dev gpu-check` report it as a skip, and gpu-check fails on one).
#pragma once

#include "cuda_check.hpp"

#include <ramjet/sdk/error.hpp>

#include <gtest/gtest.h>

#include <string>

namespace ramjet::test {

// Why there is no CUDA device, or "" when there is one.
inline std::string missing_cuda_device() {
  try {
    cuda_plugin::require_devices();
    return {};
  } catch (const ramjet::Error& e) {
    return e.what();
  }
}

}  // namespace ramjet::test

#define RAMJET_REQUIRE_GPU()                                                               \
  do {                                                                                     \
    const std::string ramjet_missing_gpu = ::ramjet::test::missing_cuda_device();          \
    if (!ramjet_missing_gpu.empty()) GTEST_SKIP() << ramjet_missing_gpu << " (needs a GPU)"; \
  } while (0)
