// exporter "tflite": writes a full-integer or dynamic-range qgraph (docs/quantized-graph.md) as a TensorFlow Lite model.
// The file appears at `path` only when complete (ramjet::write_file_atomically: a uniquely named temporary file
// beside it, flushed, renamed over it).
#pragma once

#include <ramjet/sdk.hpp>

#include <filesystem>

namespace tflite_plugin {

class TfliteExporter {
 public:
  static ramjet::Fields fields() { return {}; }  // nothing to configure: any key is unknown
  explicit TfliteExporter(const ramjet::Config& config);
  void export_model(const nlohmann::json& graph, ramjet::Example& params, const std::filesystem::path& path);
};

}  // namespace tflite_plugin
