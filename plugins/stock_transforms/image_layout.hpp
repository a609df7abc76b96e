// Image tensors in the stock transforms are channels-last: [H, W, C], or [H, W] for a single channel.
#pragma once

#include <ramjet/sdk.hpp>

#include <string>

namespace stock_transforms {

struct ImageDims {
  int64_t height, width, channels;
};

inline ImageDims image_dims(const DLTensor& t, const std::string& key) {
  if (t.ndim == 3) return {t.shape[0], t.shape[1], t.shape[2]};
  if (t.ndim == 2) return {t.shape[0], t.shape[1], 1};
  throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, "tensor '" + key + "' has " + std::to_string(t.ndim) +
                                                  " dimensions; images must be [H, W, C] or [H, W]");
}

inline void require_contiguous_cpu(const DLTensor& t, const std::string& key) {
  if (t.device.device_type != kDLCPU || !ramjet::is_contiguous(t))
    throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, "tensor '" + key + "' must be a contiguous CPU tensor");
}

// Calls f(T* values) for the tensor's element type (uint8, int32, float32, float64).
template <class F>
void visit_numeric(DLTensor& t, const std::string& key, F&& f) {
  if (ramjet::same_dtype(t.dtype, ramjet::dtype_of<uint8_t>())) return f(ramjet::data_as<uint8_t>(t));
  if (ramjet::same_dtype(t.dtype, ramjet::dtype_of<float>())) return f(ramjet::data_as<float>(t));
  if (ramjet::same_dtype(t.dtype, ramjet::dtype_of<int32_t>())) return f(ramjet::data_as<int32_t>(t));
  if (ramjet::same_dtype(t.dtype, ramjet::dtype_of<double>())) return f(ramjet::data_as<double>(t));
  throw ramjet::Error(RAMJET_ERR_UNSUPPORTED,
                      "tensor '" + key + "' has dtype " + ramjet::dtype_name(t.dtype) + " (expected uint8, int32, float32 or float64)");
}

}  // namespace stock_transforms
