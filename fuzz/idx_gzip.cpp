// The IDX reader of the stock_sources plugin, raw or gzipped (file_bytes.cpp inflates). Bad files are refused
// with ramjet::Error only.
#include "fuzz_support.hpp"

#include "idx_file.hpp"

#include <ramjet/sdk.hpp>

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ramjet::fuzz::install_host_api();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = ramjet::fuzz::write_scratch("images.idx", data, size);
  try {
    const stock_sources::IdxFile f = stock_sources::read_idx(path);
    // Touch the last item: the reader promised every item lies inside the bytes it returned.
    if (f.dims[0] > 0 && f.item_bytes > 0) {
      volatile uint8_t last = f.item(f.dims[0] - 1)[f.item_bytes - 1];
      (void)last;
    }
  } catch (const ramjet::Error&) {
  }
  return 0;
}
