// The graph IR: what the manifest's `model` section becomes before a backend compiles it. Keras-like layers
// are resolved into nodes with explicit attributes, per-example output shapes (channels-last) and named
// parameters, so a backend never has to know Keras's defaults or shape rules.
//
//   {"inputs": [{"name", "shape", "dtype"}], "labels": {"name", "dtype", "shape"}?,
//    "nodes": [{"name", "op", "inputs": [...], "shape": [...], "attrs": {...}, "params": {"kernel": "<name>", ...}}],
//    "outputs": ["<node>", ...], "loss": {"op", "input", "labels", "ignore_label"?, "label_smoothing"?}?,
//    "params": {"<name>": {"shape", "init", "fan_in", "fan_out"}}}
// Inputs are float32 or int32 (token IDs, read by embeddings only); every node's output is float32.
//
// Layouts are Keras's: conv kernels HWIO, dense kernels [in, out]; flatten follows NHWC order.
#pragma once

#include "ramjet/plugin/example.hpp"
#include "ramjet/plugin/location.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace ramjet::core {

struct Graph {
  nlohmann::json ir;
  int64_t parameter_count = 0;
};

// Builds the IR from the manifest's `model` object (found at `pointer` of `origin`). Only the plan reader calls it.
// Throws ManifestError naming the manifest, the JSON pointer of the offending layer or field, and what is wrong
// (shape mismatches included); the first problem stops it, since shapes are inferred layer by layer.
Graph build_graph(const nlohmann::json& model, const Origin& origin, const std::string& pointer = "/model");

// Fresh parameters for every entry of ir["params"], by their initializer, seeded by (seed, parameter name) so
// the same manifest always starts from the same weights. Keras's initializers: glorot_uniform (default for
// kernels), glorot_normal, he_uniform, he_normal, lecun_normal (truncated normals as Keras draws them), zeros,
// ones, uniform (Keras's embeddings default: U(-0.05, 0.05)).
Example initial_parameters(const nlohmann::json& ir, uint64_t seed);

// A Keras-style summary: one line per node with its output shape and parameter count.
std::string graph_summary(const Graph& graph);

}  // namespace ramjet::core
