#include "exporter.hpp"

#include "tflite_writer.hpp"

namespace tflite_plugin {

TfliteExporter::TfliteExporter(const ramjet::Config& /*config*/) {}

void TfliteExporter::export_model(const nlohmann::json& graph, ramjet::Example& params, const std::filesystem::path& path) {
  if (path.empty()) throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "tflite exporter: the output path is empty");
  // Build everything in memory first: a graph TFLite cannot express fails before any file is touched.
  const std::string model = build_tflite_model(graph, params);
  ramjet::write_file_atomically(path, model);
}

}  // namespace tflite_plugin
