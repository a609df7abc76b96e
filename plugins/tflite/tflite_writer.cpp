// The entry point; the writer itself is in writer/ (model_writer.hpp lists which file does what).
#include "tflite_writer.hpp"

#include "writer/model_writer.hpp"
#include "writer/node_options.hpp"

namespace tflite_plugin {

std::string build_tflite_model(const json& qgraph, ramjet::Example& params) {
  try {
    return writer::ModelWriter(qgraph, params).build();
  } catch (const json::exception& e) {
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "tflite exporter: malformed qgraph: " + writer::json_problem(e));
  }
}

}  // namespace tflite_plugin
