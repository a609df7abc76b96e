// The .npy reader of the stock_sources plugin (npy_format.cpp: the header; npy_array.cpp: the length check and
// the int64/float64 narrowing), as the npz source calls it on an archive member's bytes. Bad files are refused
// with ramjet::Error only.
#include "fuzz_support.hpp"

#include "npy_array.hpp"

#include <ramjet/sdk.hpp>

#include <cstring>

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ramjet::fuzz::install_host_api();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    stock_sources::Bytes bytes;
    stock_sources::reserve_bytes(bytes, size ? size : 1, "fuzz.npy");
    if (size) std::memcpy(bytes.begin(), data, size);
    bytes.size = size;
    const stock_sources::NpyArray a = stock_sources::npy_from_bytes(std::move(bytes), "fuzz.npy");
    // The reader promised every example lies inside the bytes: read the first and the last.
    if (a.count() > 0) {
      (void)a.example(0);
      (void)a.example(a.count() - 1);
    }
  } catch (const ramjet::Error&) {
  }
  return 0;
}
