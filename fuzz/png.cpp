// PNG decoding of the stock_images plugin (png_codec.cpp). The channel conversion (as stored, gray, RGB) is
// chosen from the input's size so every path is reached. Bad images are refused with ramjet::Error only.
#include "fuzz_support.hpp"

#include "image_codec.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ramjet::fuzz::install_host_api();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static constexpr int kChannels[3] = {0, 1, 3};
  try {
    ramjet::Tensor image = stock_images::decode_png(data, size, kChannels[size % 3], "fuzz.png");
    (void)image;
  } catch (const ramjet::Error&) {
  }
  return 0;
}
