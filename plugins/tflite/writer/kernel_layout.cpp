#include "writer/kernel_layout.hpp"

namespace tflite_plugin::writer {

std::vector<int8_t> hwio_to_ohwi(const int8_t* hwio, const Shape& kernel_shape) {
  const int64_t kh = kernel_shape[0], kw = kernel_shape[1], ci = kernel_shape[2], co = kernel_shape[3];
  std::vector<int8_t> ohwi(static_cast<size_t>(product(kernel_shape)));
  for (int64_t h = 0; h < kh; ++h)
    for (int64_t x = 0; x < kw; ++x)
      for (int64_t i = 0; i < ci; ++i)
        for (int64_t o = 0; o < co; ++o)
          ohwi[static_cast<size_t>(((o * kh + h) * kw + x) * ci + i)] = hwio[((h * kw + x) * ci + i) * co + o];
  return ohwi;
}

std::vector<int8_t> in_out_to_out_in(const int8_t* in_out, int64_t in, int64_t out) {
  std::vector<int8_t> out_in(static_cast<size_t>(in * out));
  for (int64_t i = 0; i < in; ++i)
    for (int64_t o = 0; o < out; ++o) out_in[static_cast<size_t>(o * in + i)] = in_out[i * out + o];
  return out_in;
}

}  // namespace tflite_plugin::writer
