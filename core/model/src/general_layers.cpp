// Layers of every kind of model: dense (on the last axis of any rank, as Keras's Dense), dropout, the activations,
// softmax, the elementwise merges (add, multiply, subtract), concat, reshape and transpose.
#include "layer_site.hpp"

#include <ramjet/sdk/fields.hpp>

#include <algorithm>

namespace ramjet::core::model_rules {
namespace {

void dense(LayerSite& site) {
  const Shape& in = site.single();
  const int64_t units = site.positive("units");
  site.out = in;
  site.out.back() = units;
  const bool bias = site.flag("use_bias", true);
  site.attrs = {{"units", units}, {"use_bias", bias}, {"activation", site.activation()}};
  site.kernel_and_bias({in.back(), units}, in.back(), units, {units}, bias);
}

void dropout(LayerSite& site) {
  site.out = site.single();
  site.attrs = {{"rate", site.number("rate", 0.5, [](double r) { return r >= 0 && r < 1; }, "in [0, 1)")}};
}

// An activation as a layer: `{"type": "relu"}` or `{"type": "activation", "activation": "relu"}`.
void activation(LayerSite& site) {
  site.out = site.single();
  site.op = "activation";
  const std::string which = site.type() == "activation" ? site.activation() : site.type();
  site.attrs = {{"activation", which}};
  // Keras's LeakyReLU layer leans 0.3 below zero, its activation function (Activation("leaky_relu")) 0.2.
  if (which == "leaky_relu")
    site.attrs["negative_slope"] = site.number("negative_slope", site.type() == "leaky_relu" ? 0.3 : 0.2,
                                               [](double v) { return v >= 0 && v < 1e6; }, "at least 0");
  if (which == "elu")
    site.attrs["alpha"] = site.number("alpha", 1.0, [](double v) { return v >= 0 && v < 1e6; }, "at least 0");
}

void softmax(LayerSite& site) { site.out = site.single(); }

// add: two or more inputs of one shape; multiply and subtract: exactly two.
void elementwise(LayerSite& site) {
  const bool binary = site.type() != "add";
  if (binary ? site.input_count() != 2 : site.input_count() < 2)
    site.fail_at("inputs", site.type() + (binary ? " needs exactly two inputs" : " needs at least two inputs"));
  site.require_float_inputs();
  site.out = site.input(0);
  for (size_t i = 1; i < site.input_count(); ++i)
    if (site.input(i) != site.out)
      site.fail_at("inputs", site.type() + " needs equal shapes: '" + site.input_name(0) + "' is " +
                                 shape_text(site.out) + ", '" + site.input_name(i) + "' is " +
                                 shape_text(site.input(i)));
}

// Keras's Concatenate(axis): `axis` counts the batch axis as 0 (refused: examples are not joined), so 1 .. rank are
// the per-example axes and -1 .. -rank count from the end. Every other axis must agree. The IR's `axis` counts from
// the end (-1 the last): the same number whether or not its reader counts the batch axis.
void concat(LayerSite& site) {
  if (site.input_count() < 2) site.fail_at("inputs", "concat needs at least two inputs");
  site.require_float_inputs();
  site.out = site.input(0);
  const int64_t rank = static_cast<int64_t>(site.out.size());
  if (rank == 0) site.fail_at("inputs", "concat needs inputs with at least one axis");
  int64_t axis = -1;
  if (site.has("axis")) {
    const json& a = site.layer()["axis"];
    if (!a.is_number_integer() || a.get<int64_t>() < -rank - 1 || a.get<int64_t>() > rank)
      site.fail_at("axis", "must be an integer from " + std::to_string(-rank) + " to " + std::to_string(rank) +
                               " for the input " + shape_text(site.out) + " (Keras counts the batch axis as 0), got " +
                               quote_value(a));
    axis = a.get<int64_t>();
    if (axis == 0 || axis == -rank - 1)
      site.fail_at("axis", "names the batch axis: concat joins the axes of each example (1 to " +
                               std::to_string(rank) + ", or -1 for the last)");
  }
  const size_t k = static_cast<size_t>(axis < 0 ? rank + axis : axis - 1);
  for (size_t i = 1; i < site.input_count(); ++i) {
    const Shape& other = site.input(i);
    bool agree = other.size() == site.out.size();
    for (size_t d = 0; agree && d < other.size(); ++d) agree = d == k || other[d] == site.input(0)[d];
    if (!agree)
      site.fail_at("inputs", "concat on axis " + std::to_string(k + 1) + " needs the other axes to match: '" +
                                 site.input_name(0) + "' is " + shape_text(site.input(0)) + ", '" +
                                 site.input_name(i) + "' is " + shape_text(other));
    site.out[k] += other[k];
  }
  if (site.out[k] > kMaxDimension)
    site.fail_at("inputs", "the joined axis is longer than " + std::to_string(kMaxDimension));
  site.attrs = {{"axis", static_cast<int64_t>(k) - rank}};
}

void reshape(LayerSite& site) {
  const Shape& in = site.single();
  if (!site.has("shape") || !site.layer()["shape"].is_array()) site.fail_at("shape", "required: the per-example shape");
  for (const auto& d : site.layer()["shape"])
    if (!d.is_number_integer() || d.get<int64_t>() < -1 || d.get<int64_t>() > kMaxElementsPerExample)
      site.fail_at("shape", "dimensions must be positive integers (one may be -1), got " + quote_value(d));
  Shape out = site.layer()["shape"].get<Shape>();
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1 && infer < 0) infer = static_cast<int64_t>(i);
    else if (out[i] < 1) site.fail_at("shape", "dimensions must be positive (one may be -1)");
    else if (__builtin_mul_overflow(known, out[i], &known) || known > kMaxElementsPerExample)
      site.fail_at("shape", "more than 2^31 elements per example");
  }
  if (infer >= 0) out[static_cast<size_t>(infer)] = product(in) / known;
  if (product(out) != product(in))
    site.fail_at("shape", shape_text(out) + " does not hold the " + std::to_string(product(in)) + " values of " +
                              shape_text(in));
  site.out = out;
  site.attrs = {{"shape", out}};
}

// Permutes the per-example axes: `perm` lists, for each output axis, the input axis it takes (0-based).
void transpose(LayerSite& site) {
  const Shape& in = site.single();
  if (!site.has("perm") || !site.layer()["perm"].is_array())
    site.fail_at("perm", "required: the input axis of each output axis, e.g. [1, 0]");
  const json& perm = site.layer()["perm"];
  std::vector<bool> used(in.size(), false);
  Shape out;
  for (const auto& axis : perm) {
    if (!axis.is_number_integer() || axis.get<int64_t>() < 0 || axis.get<int64_t>() >= static_cast<int64_t>(in.size()) ||
        used[static_cast<size_t>(axis.get<int64_t>())])
      site.fail_at("perm", "must be a permutation of 0 .. " + std::to_string(in.size() - 1) + " (the input is " +
                               shape_text(in) + "), got " + quote_value(perm));
    used[static_cast<size_t>(axis.get<int64_t>())] = true;
    out.push_back(in[static_cast<size_t>(axis.get<int64_t>())]);
  }
  if (out.size() != in.size())
    site.fail_at("perm", "must name all " + std::to_string(in.size()) + " axes of the input " + shape_text(in));
  site.out = out;
  site.attrs = {{"perm", perm}};
}

}  // namespace

void add_general_layers(std::map<std::string, LayerRule>& rules) {
  rules["dense"] = {dense, {"units", "use_bias", "activation", "kernel_initializer", "bias_initializer"}};
  rules["dropout"] = {dropout, {"rate"}};
  rules["activation"] = {activation, {"activation", "negative_slope", "alpha"}};
  for (const auto& name : activations()) rules[name] = {activation, {}};
  rules["leaky_relu"].fields = {"negative_slope"};
  rules["elu"].fields = {"alpha"};
  rules["softmax"] = {softmax, {}};
  rules["add"] = {elementwise, {}};
  rules["multiply"] = {elementwise, {}};
  rules["subtract"] = {elementwise, {}};
  rules["concat"] = {concat, {"axis"}};
  rules["reshape"] = {reshape, {"shape"}};
  rules["transpose"] = {transpose, {"perm"}};
}

}  // namespace ramjet::core::model_rules
