#include "layer_site.hpp"

#include <ramjet/sdk/fields.hpp>

#include <algorithm>

namespace ramjet::core::model_rules {

std::string shape_text(const Shape& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

int64_t product(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s)
    if (__builtin_mul_overflow(n, d, &n)) return INT64_MAX;
  return n;
}

const std::set<std::string>& activations() {
  static const std::set<std::string> names = {"linear", "relu",  "relu6", "sigmoid",  "tanh",
                                              "gelu",   "swish", "elu",   "softplus", "leaky_relu"};
  return names;
}

namespace {

std::string joined(const std::set<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

const std::set<std::string> kInitializers = {"glorot_uniform", "glorot_normal", "he_uniform", "he_normal",
                                             "lecun_normal",   "zeros",         "ones",       "uniform"};

}  // namespace

void LayerSite::fail_at(const std::string& field, const std::string& message) const {
  const std::string p = field.empty() ? pointer_ : pointer_ + "/" + field;
  // A problem of the whole layer (its input's rank or size) names the layer, which the pointer gives only by index.
  throw ManifestError(origin_.where(p), p, field.empty() ? "layer '" + name_ + "': " + message : message);
}

const Shape& LayerSite::single() const {
  if (inputs_.size() != 1) fail_at("inputs", type_ + " takes exactly one input");
  require_float_inputs();
  return input_info_[0].shape;
}

void LayerSite::require_float_inputs() const {
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (input_info_[i].dtype != "float32")
      fail_at(has("inputs") ? "inputs" : "", type_ + " reads float32 values, but '" + inputs_[i] + "' is " +
                                                 input_info_[i].dtype + " (token IDs go through an embedding first)");
}

int64_t LayerSite::positive(const char* key) const {
  if (!layer_.contains(key)) fail_at(key, "required field is missing");
  return positive(key, 1);
}

int64_t LayerSite::positive(const char* key, int64_t fallback) const {
  auto it = layer_.find(key);
  if (it == layer_.end()) return fallback;
  if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > kMaxDimension)
    fail_at(key, "must be an integer from 1 to " + std::to_string(kMaxDimension) + ", got " + quote_value(*it));
  return it->get<int64_t>();
}

double LayerSite::number(const char* key, double fallback, bool (*ok)(double), const char* rule) const {
  auto it = layer_.find(key);
  if (it == layer_.end()) return fallback;
  if (!it->is_number() || !ok(it->get<double>()))
    fail_at(key, std::string("must be a number ") + rule + ", got " + quote_value(*it));
  return it->get<double>();
}

bool LayerSite::flag(const char* key, bool fallback) const {
  auto it = layer_.find(key);
  if (it == layer_.end()) return fallback;
  if (!it->is_boolean()) fail_at(key, "must be true or false, got " + quote_value(*it));
  return it->get<bool>();
}

std::vector<int64_t> LayerSite::pair(const char* key, int64_t fallback) const {
  if (!layer_.contains(key)) return {fallback, fallback};
  const json& v = layer_[key];
  auto ok = [](const json& x) {
    return x.is_number_integer() && x.get<int64_t>() > 0 && x.get<int64_t>() <= kMaxDimension;
  };
  if (ok(v)) return {v.get<int64_t>(), v.get<int64_t>()};
  if (v.is_array() && v.size() == 2 && ok(v[0]) && ok(v[1])) return v.get<std::vector<int64_t>>();
  fail_at(key, "must be a positive integer or [height, width], each at most " + std::to_string(kMaxDimension));
}

std::vector<int64_t> LayerSite::sides(const char* key, int64_t fallback) const {
  if (!layer_.contains(key)) return {fallback, fallback, fallback, fallback};
  const json& v = layer_[key];
  auto ok = [](const json& x) {
    return x.is_number_integer() && x.get<int64_t>() >= 0 && x.get<int64_t>() <= kMaxDimension;
  };
  auto both = [&](const json& x) { return x.is_array() && x.size() == 2 && ok(x[0]) && ok(x[1]); };
  if (ok(v)) return {v.get<int64_t>(), v.get<int64_t>(), v.get<int64_t>(), v.get<int64_t>()};
  if (both(v)) return {v[0].get<int64_t>(), v[0].get<int64_t>(), v[1].get<int64_t>(), v[1].get<int64_t>()};
  if (v.is_array() && v.size() == 2 && both(v[0]) && both(v[1]))
    return {v[0][0].get<int64_t>(), v[0][1].get<int64_t>(), v[1][0].get<int64_t>(), v[1][1].get<int64_t>()};
  fail_at(key, "must be an integer, [rows, columns] or [[top, bottom], [left, right]], each from 0 to " +
                   std::to_string(kMaxDimension) + ", got " + quote_value(v));
}

std::string LayerSite::activation() const {
  auto it = layer_.find("activation");
  if (it == layer_.end() || it->is_null()) return "linear";
  if (!it->is_string() || !activations().count(it->get<std::string>()))
    fail_at("activation", "unknown activation " + (it->is_string() ? "'" + it->get<std::string>() + "'" : quote_value(*it)) +
                              " (" + joined(activations()) + ")");
  return it->get<std::string>();
}

std::string LayerSite::initializer(const char* key, const char* fallback) const {
  auto it = layer_.find(key);
  if (it == layer_.end()) return fallback;
  if (!it->is_string() || !kInitializers.count(it->get<std::string>()))
    fail_at(key, "unknown initializer " + (it->is_string() ? "'" + it->get<std::string>() + "'" : quote_value(*it)) +
                     " (" + joined(kInitializers) + ")");
  return it->get<std::string>();
}

std::string LayerSite::padding(bool causal_allowed) const {
  auto it = layer_.find("padding");
  if (it == layer_.end()) return "valid";
  const bool ok = it->is_string() && (*it == "valid" || *it == "same" || (causal_allowed && *it == "causal"));
  if (!ok) fail_at("padding", causal_allowed ? "must be \"valid\", \"same\" or \"causal\"" : "must be \"valid\" or \"same\"");
  return it->get<std::string>();
}

void LayerSite::param(const std::string& role, const Shape& shape, const std::string& init, int64_t fan_in,
                      int64_t fan_out) {
  const std::string full = name_ + "/" + role;
  add_param_(full, shape, init, fan_in, fan_out, pointer_);
  params[role] = full;
}

void LayerSite::kernel_and_bias(const Shape& kernel, int64_t fan_in, int64_t fan_out, const Shape& bias,
                                bool use_bias) {
  param("kernel", kernel, initializer("kernel_initializer", "glorot_uniform"), fan_in, fan_out);
  if (use_bias) param("bias", bias, initializer("bias_initializer", "zeros"), 0, 0);
}

}  // namespace ramjet::core::model_rules
