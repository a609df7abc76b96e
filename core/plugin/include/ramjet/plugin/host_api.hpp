// The host side of the ABI: the API table handed to every plugin, and the host-owned objects behind the opaque
// types of abi.h (errors, buffers).
#pragma once

#include <ramjet/abi.h>

#include <string>

// Global namespace: these complete the opaque types declared in abi.h.
struct ramjet_error {
  ramjet_status status = RAMJET_OK;
  std::string message;
};

struct ramjet_buffer {
  std::string bytes;
};

namespace ramjet::core {

// The ABI versions this host speaks.
inline constexpr uint32_t kHostAbiMin = 1;
inline constexpr uint32_t kHostAbiMax = RAMJET_ABI_VERSION;

const ramjet_host_api* host_api();

// "status 5 (corrupt data)" for messages.
std::string describe_status(ramjet_status status);

}  // namespace ramjet::core
