// The .tflite writer of the tflite plugin (tflite_writer.cpp, writer/, qgraph.cpp): the input is the quantized
// graph JSON the exporter receives; its parameters are made up from the graph's own "params" declarations
// (zero-filled, the declared shape and dtype) so the writer gets past the lookups into the layout code. The
// model is built in memory. Bad graphs are refused with ramjet::Error only.
#include "fuzz_support.hpp"

#include "tflite_writer.hpp"

#include "ramjet/plugin/example.hpp"

#include <ramjet/sdk.hpp>

#include <nlohmann/json.hpp>

namespace {

// A declared parameter as a zero tensor, when its declaration is well-formed and small.
void add_declared(ramjet::Example& params, const std::string& name, const nlohmann::json& spec) {
  if (!spec.is_object() || !spec.contains("shape") || !spec["shape"].is_array()) return;
  std::vector<int64_t> shape;
  int64_t elements = 1;
  for (const auto& d : spec["shape"]) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0 || d.get<int64_t>() > 4096) return;
    shape.push_back(d.get<int64_t>());
    elements *= shape.back();
    if (elements > (1 << 16)) return;
  }
  DLDataType dtype = ramjet::dtype_of<float>();
  if (spec.contains("dtype") && spec["dtype"].is_string() && !ramjet::parse_dtype(spec["dtype"].get<std::string>(), dtype))
    return;
  if (dtype.lanes != 1 || dtype.bits % 8 != 0 || dtype.bits == 0) return;
  params.set(name, ramjet::Tensor::zeros(dtype, shape));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ramjet::fuzz::install_host_api();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The exporter's caller hands it text that the quantizer wrote, parsed by the plugin boundary; a parse error
  // is the boundary's business, not the writer's.
  const nlohmann::json qgraph = nlohmann::json::parse(data, data + size, nullptr, false);
  if (qgraph.is_discarded()) return 0;
  ramjet::core::Example storage;
  ramjet::Example params(&storage);
  if (qgraph.is_object() && qgraph.contains("params") && qgraph["params"].is_object())
    for (const auto& [name, spec] : qgraph["params"].items()) add_declared(params, name, spec);
  try {
    const std::string model = tflite_plugin::build_tflite_model(qgraph, params);
    (void)model;
  } catch (const ramjet::Error&) {
  }
  return 0;
}
