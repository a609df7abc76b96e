#include "quant_table.hpp"

#include <cmath>

namespace onednn::int8 {
namespace {

[[noreturn]] void invalid(const std::string& message) {
  fail(RAMJET_ERR_INVALID_ARGUMENT, "qgraph: #/quantization" + message);
}

std::vector<double> numbers(const nlohmann::json& entry, const char* key, const std::string& where) {
  const auto it = entry.find(key);
  if (it == entry.end()) invalid(where + ": '" + key + "' is missing");
  std::vector<double> out;
  if (it->is_number()) out.push_back(it->get<double>());
  else if (it->is_array() && !it->empty())
    for (const auto& v : *it) {
      if (!v.is_number() || !std::isfinite(v.get<double>())) invalid(where + "/" + key + " must hold finite numbers");
      out.push_back(v.get<double>());
    }
  else invalid(where + "/" + key + " must be a number or a non-empty array of numbers");
  return out;
}

}  // namespace

QuantTable::QuantTable(const nlohmann::json& qgraph) {
  const auto q = qgraph.find("quantization");
  if (q == qgraph.end() || !q->is_object())
    fail(RAMJET_ERR_INVALID_ARGUMENT, "qgraph: #/quantization is missing: precision int8 needs a quantized graph "
                                      "(docs/quantized-graph.md)");
  const std::string mode = q->value("mode", std::string("full_integer"));
  if (mode != "full_integer")
    fail(RAMJET_ERR_UNSUPPORTED, "qgraph: #/quantization/mode '" + mode +
                                     "': the onednn int8 program runs full_integer graphs only");
  const auto tensors = q->find("tensors");
  if (tensors == q->end() || !tensors->is_object()) invalid("/tensors must be an object");
  for (const auto& [name, entry] : tensors->items()) {
    const std::string where = "/tensors/" + name;
    if (!entry.is_object()) invalid(where + " must be an object");
    const std::string dtype = entry.value("dtype", std::string());
    const auto scales = numbers(entry, "scale", where);
    for (double s : scales)
      if (!(s > 0)) invalid(where + "/scale must be > 0");
    if (dtype == "int8" && !entry.contains("axis") && scales.size() == 1) {
      // An activation, or a per-tensor weight: both readings are kept, the graph decides which it is.
      const auto zps = numbers(entry, "zero_point", where);
      if (zps.size() != 1 || zps[0] != std::floor(zps[0]) || zps[0] < -128 || zps[0] > 127)
        invalid(where + "/zero_point must be one integer in [-128, 127]");
      activations_[name] = {static_cast<float>(scales[0]), static_cast<int32_t>(zps[0])};
    }
    if (dtype == "int8" || dtype == "int32") {
      WeightQuant w;
      for (double s : scales) w.scale.push_back(static_cast<float>(s));
      if (entry.contains("axis")) {
        if (!entry["axis"].is_number_integer()) invalid(where + "/axis must be an integer");
        w.axis = entry["axis"].get<int>();
      }
      if (entry.contains("zero_point"))
        for (double z : numbers(entry, "zero_point", where)) w.symmetric = w.symmetric && z == 0;
      weights_[name] = std::move(w);
    } else if (dtype != "int8") {
      fail(RAMJET_ERR_UNSUPPORTED, "qgraph: #/quantization" + where + ": dtype '" + dtype +
                                       "' is not supported by the onednn int8 program (int8, int32)");
    }
  }
}

const ActivationQuant& QuantTable::activation(const std::string& tensor) const {
  const auto it = activations_.find(tensor);
  if (it == activations_.end())
    invalid("/tensors has no per-tensor int8 entry for the activation '" + tensor + "'");
  return it->second;
}

const WeightQuant& QuantTable::weight(const std::string& param) const {
  const auto it = weights_.find(param);
  if (it == weights_.end()) invalid("/tensors has no entry for the parameter '" + param + "'");
  if (!it->second.symmetric)
    invalid("/tensors/" + param + "/zero_point: weights and biases must be symmetric (zero point 0)");
  return it->second;
}

}  // namespace onednn::int8
