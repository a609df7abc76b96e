// CRC-32C (Castagnoli), the checksum of TFRecord framing. Debian bookworm packages no C/C++ CRC-32C library
// (Google's crc32c and abseil's absl/crc arrived later), so this is a small one: SSE4.2's crc32 instruction where
// the CPU has it, slicing-by-8 tables otherwise.
#pragma once

#include <cstddef>
#include <cstdint>

namespace stock_records {

uint32_t crc32c(const void* data, size_t size);  // crc32c("123456789") == 0xe3069283

// The two implementations, exposed so the tests can check each against the other and the check value.
uint32_t crc32c_portable(const void* data, size_t size);
bool crc32c_hardware_available();
uint32_t crc32c_hardware(const void* data, size_t size);  // only when crc32c_hardware_available()

// TFRecord stores checksums "masked" so that a CRC over data holding CRCs stays well-behaved.
inline uint32_t masked_crc32c(const void* data, size_t size) {
  const uint32_t crc = crc32c(data, size);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

}  // namespace stock_records
