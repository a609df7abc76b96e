#include "writer/node_options.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tflite_plugin::writer {

std::string json_problem(const json::exception& e) {
  std::string text = e.what();
  if (text.rfind("[json.exception.", 0) == 0) {
    const size_t close = text.find("] ");
    if (close != std::string::npos) text.erase(0, close + 2);
  }
  if (text.size() > 200) text = text.substr(0, 200) + "...";
  return text;
}

void fail(const std::string& message) {
  throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, "tflite exporter: " + message);
}

Shape checked_shape(const json& value, const std::string& what) {
  if (!value.is_array()) fail(what + ": the shape must be an array of integers");
  Shape shape;
  int64_t elements = 1;
  for (const auto& d : value) {
    if (!d.is_number_integer() || d.get<int64_t>() < 1 || d.get<int64_t>() > (int64_t{1} << 24))
      fail(what + ": shape dimensions must be integers in [1, 2^24], got " + d.dump().substr(0, 40));
    shape.push_back(d.get<int64_t>());
    elements *= shape.back();  // both factors <= 2^31 here: no overflow
    if (elements > (int64_t{1} << 31)) fail(what + ": the shape holds more than 2^31 elements");
  }
  return shape;
}

namespace {
void check_numbers_at(const json& v, const std::string& pointer, int depth) {
  if (depth > 64) fail("the qgraph is nested deeper than 64 levels at " + pointer.substr(0, 200));
  if (v.is_number_float()) {
    const double x = v.get<double>();
    if (!(std::abs(x) < 2147483648.0)) fail("the qgraph holds the number " + v.dump() + " at " + pointer.substr(0, 200));
  } else if (v.is_object()) {
    for (const auto& [key, item] : v.items()) check_numbers_at(item, pointer + "/" + key.substr(0, 40), depth + 1);
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) check_numbers_at(v[i], pointer + "/" + std::to_string(i), depth + 1);
  }
}
}  // namespace

void check_numbers(const json& qgraph) { check_numbers_at(qgraph, "", 0); }

std::pair<int64_t, int64_t> pair_attr(const json& node, const char* key, int64_t fallback) {
  const json& attrs = node.at("attrs");
  if (!attrs.contains(key)) return {fallback, fallback};
  const auto v = attrs.at(key).get<std::vector<int64_t>>();
  if (v.size() != 2) fail(describe(node) + ": attribute '" + key + "' must have two values");
  for (int64_t x : v)
    if (x < 1 || x > 65536) fail(describe(node) + ": attribute '" + key + "' values must be in [1, 65536]");
  return {v[0], v[1]};
}

tfl::ActivationFunctionType fused_activation(const json& node) {
  const std::string a = activation_of(node);
  if (a == "linear") return tfl::ActivationFunctionType_NONE;
  if (a == "relu") return tfl::ActivationFunctionType_RELU;
  if (a == "relu6") return tfl::ActivationFunctionType_RELU6;
  fail(describe(node) + ": activation '" + a + "' cannot be fused in TFLite (NONE, RELU, RELU6)");
}

// TFLite knows only SAME and VALID; the IR carries explicit [top, bottom, left, right] padding.
tfl::Padding padding_of(const json& node, const Shape& in, std::pair<int64_t, int64_t> kernel,
                        std::pair<int64_t, int64_t> strides, std::pair<int64_t, int64_t> dilation) {
  std::vector<int64_t> pads = node.at("attrs").value("padding", std::vector<int64_t>{0, 0, 0, 0});
  if (pads.size() != 4) fail(describe(node) + ": padding must be [top, bottom, left, right]");
  if (std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; })) return tfl::Padding_VALID;
  auto same = [](int64_t size, int64_t k, int64_t s, int64_t d) {
    const int64_t out = (size + s - 1) / s;
    const int64_t total = std::max<int64_t>((out - 1) * s + (k - 1) * d + 1 - size, 0);
    return std::pair<int64_t, int64_t>{total / 2, total - total / 2};
  };
  const auto h = same(in[0], kernel.first, strides.first, dilation.first);
  const auto w = same(in[1], kernel.second, strides.second, dilation.second);
  if (pads == std::vector<int64_t>{h.first, h.second, w.first, w.second}) return tfl::Padding_SAME;
  fail(describe(node) + ": padding " + shape_text(pads) + " is neither SAME " +
       shape_text({h.first, h.second, w.first, w.second}) + " nor VALID, which is all TFLite can express");
}

}  // namespace tflite_plugin::writer
