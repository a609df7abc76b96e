#include "ramjet/plan/pipeline_manifest.hpp"

#include "ramjet/plugin/failure.hpp"

#include <fstream>
#include <set>
#include <sstream>

namespace ramjet::core {

using nlohmann::json;

PipelineManifest load_pipeline_manifest(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InvalidInput(path.string() + ": cannot open the manifest file");
  PipelineManifest m;
  m.path = path;
  try {
    m.doc = json::parse(in);
  } catch (const json::parse_error& e) {
    // nlohmann's message carries line and column; the byte offset is the place a tool can jump to.
    throw InvalidInput(path.string() + ": not valid JSON at byte " + std::to_string(e.byte) + ": " + e.what());
  }
  return m;
}

void apply_override(PipelineManifest& manifest, const std::string& assignment) {
  auto eq = assignment.find('=');
  if (assignment.empty() || assignment[0] != '/' || eq == std::string::npos)
    throw InvalidInput("--set '" + assignment + "': expected POINTER=VALUE, e.g. --set /data/train/batch=64");
  const std::string pointer = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  json value;
  try {
    value = json::parse(text);
  } catch (const json::parse_error&) {
    value = text;  // a bare word such as mixed_bfloat16
  }
  try {
    manifest.doc[json::json_pointer(pointer)] = value;
  } catch (const json::exception& e) {
    throw InvalidInput("--set '" + assignment + "': cannot set " + manifest.where(pointer) + ": " + e.what());
  }
}

}  // namespace ramjet::core
