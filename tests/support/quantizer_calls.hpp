// The int8 quantizer's two calls as the tflite tests make them: observe a float32 vector, quantize a graph.
#pragma once

#include "abi_status.hpp"
#include "ramjet/plugin/example.hpp"
#include "ramjet/plugin/tensor.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace ramjet::test {

using QuantizerInstance = Instance<ramjet_quantizer_vtable>;

// The elements of tensor `name` of `e` as T (a test failure, and none, when `e` has no such tensor).
template <class T>
std::vector<T> values_of(core::Example& e, const std::string& name) {
  const DLTensor* t = e.find(name);
  EXPECT_NE(t, nullptr) << name;
  if (t == nullptr) return {};
  const T* data = static_cast<const T*>(core::first_byte(*t));
  return std::vector<T>(data, data + core::element_count(*t));
}

// Calibration: `values` as one float32 tensor [n] seen at tensor `name`.
inline Status observe(const QuantizerInstance& quantizer, const std::string& name, const std::vector<float>& values) {
  const std::vector<int64_t> shape{static_cast<int64_t>(values.size())};
  core::TensorPtr t = core::make_tensor(DLDataType{kDLFloat, 32, 1}, shape);
  std::copy(values.begin(), values.end(), static_cast<float*>(t->dl_tensor.data));
  return call(
      [&](ramjet_error* e) { return quantizer.table().observe(quantizer.self(), name.c_str(), &t->dl_tensor, e); });
}

// The quantized graph (parsed into `qgraph` when the call succeeds) and its parameters.
inline Status quantize(const QuantizerInstance& quantizer, const nlohmann::json& graph, core::Example& params,
                       nlohmann::json& qgraph, core::Example& qparams) {
  const std::string text = graph.dump();
  ramjet_buffer out;
  const Status s = call([&](ramjet_error* e) {
    return quantizer.table().quantize(quantizer.self(), text.c_str(), &params, &out, &qparams, e);
  });
  if (s.ok()) qgraph = nlohmann::json::parse(out.bytes);
  return s;
}

}  // namespace ramjet::test
