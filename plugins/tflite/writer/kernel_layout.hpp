// IR kernel layouts rearranged into TFLite's. A depthwise kernel needs none: the IR's [kh, kw, 1, C·m] has the
// same memory order as TFLite's [1, kh, kw, C·m].
#pragma once

#include "qgraph.hpp"

#include <cstdint>
#include <vector>

namespace tflite_plugin::writer {

// A conv kernel, IR [kh, kw, in, out] (HWIO) → CONV_2D's [out, kh, kw, in] (OHWI).
std::vector<int8_t> hwio_to_ohwi(const int8_t* hwio, const Shape& kernel_shape);

// A dense kernel, IR [in, out] → FULLY_CONNECTED's [out, in].
std::vector<int8_t> in_out_to_out_in(const int8_t* in_out, int64_t in, int64_t out);

}  // namespace tflite_plugin::writer
