// precision_policy "fixed_precision": every layer computes in one configured dtype over float32 variables, with a
// constant loss scale — a policy that takes a configuration object, to copy from:
//   "precision": {"type": "fixed_precision", "compute": "bfloat16", "loss_scale": 8}
#pragma once

#include <ramjet/sdk.hpp>

#include <string>

namespace template_plugin {

class FixedPrecision {
 public:
  static ramjet::Fields fields() {
    return {ramjet::Field::string("compute").one_of({"float32", "bfloat16"}).fallback("float32"),
            ramjet::Field::number("loss_scale").above(0).fallback(1.0)};
  }

  explicit FixedPrecision(const ramjet::Config& config)
      : loss_scale_(config.get_or("loss_scale", 1.0)) {
    ramjet::parse_dtype(config.get_or<std::string>("compute", "float32"), compute_);
  }

  // Asked by the trainer for every node of the graph; the backend runs these dtypes or names the layer it cannot.
  ramjet_layer_dtypes layer_dtypes(const nlohmann::json& /*layer*/) const {
    ramjet_layer_dtypes d{};
    d.compute = compute_;
    d.variable = ramjet::dtype_of<float>();
    return d;
  }
  float loss_scale() const { return static_cast<float>(loss_scale_); }
  // A constant scale: never skip an update (a dynamic policy would lower the scale and skip on inf/NaN).
  bool update(bool /*found_nonfinite*/) { return false; }

 private:
  double loss_scale_;
  DLDataType compute_ = ramjet::dtype_of<float>();
};

}  // namespace template_plugin
