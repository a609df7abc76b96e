// exporter "tflite": writes a full-integer or dynamic-range qgraph (docs/quantized-graph.md) as a TensorFlow Lite model. The file
// appears at `path` only when complete (written to path.tmp, flushed, renamed).
#pragma once

#include <ramjet/sdk.hpp>

#include <filesystem>

namespace tflite_plugin {

class TfliteExporter {
 public:
  explicit TfliteExporter(const ramjet::Config& config);
  void export_model(const nlohmann::json& graph, ramjet::Example& params, const std::filesystem::path& path);
};

}  // namespace tflite_plugin
