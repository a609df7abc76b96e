#include "writer/node_options.hpp"

#include <algorithm>
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

std::pair<int64_t, int64_t> pair_attr(const json& node, const char* key, int64_t fallback) {
  const json& attrs = node.at("attrs");
  if (!attrs.contains(key)) return {fallback, fallback};
  const auto v = attrs.at(key).get<std::vector<int64_t>>();
  if (v.size() != 2) fail(describe(node) + ": attribute '" + key + "' must have two values");
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
