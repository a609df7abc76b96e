// IR node attributes turned into the values TFLite's operator options hold, refusing what TFLite cannot express.
#pragma once

#include "qgraph.hpp"

#include <schema_generated.h>

#include <cstdint>
#include <string>
#include <utility>

namespace tflite_plugin::writer {

namespace tfl = ::tflite;

// Every writer error is a model TFLite cannot hold, so all of them are RAMJET_ERR_UNSUPPORTED.
[[noreturn]] void fail(const std::string& message);

// A JSON library exception as a short sentence: its text without the "[json.exception.type_error.302] " code.
std::string json_problem(const json::exception& e);

// A shape from the qgraph: integers in [1, 2^24] whose product is at most 2^31 (batch excluded), so the size
// arithmetic that follows cannot overflow. `what` names its place in messages.
Shape checked_shape(const json& value, const std::string& what);

// Refuses a qgraph holding a number no field can mean (a float at or past 2^31, NaN) or nested deeper than any
// qgraph is: converting such a number to an integer field is undefined behaviour.
void check_numbers(const json& qgraph);

// A two-value attribute ([h, w]), each in [1, 65536]; `fallback` for both when absent.
std::pair<int64_t, int64_t> pair_attr(const json& node, const char* key, int64_t fallback);

// The node's activation as a fused one (NONE, RELU, RELU6).
tfl::ActivationFunctionType fused_activation(const json& node);

// SAME or VALID for the node's explicit padding on an [H, W, C] input.
tfl::Padding padding_of(const json& node, const Shape& in, std::pair<int64_t, int64_t> kernel,
                        std::pair<int64_t, int64_t> strides, std::pair<int64_t, int64_t> dilation);

}  // namespace tflite_plugin::writer
