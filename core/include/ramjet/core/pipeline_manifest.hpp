// The pipeline manifest a user writes (`ramjet run pipeline.json`): loading, `--set` overrides, and validation
// that reports every problem with the file and the JSON pointer of the field.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace ramjet::core {

class PluginRegistry;

struct Problem {
  std::string pointer;
  std::string message;
};

struct PipelineManifest {
  std::filesystem::path path;
  nlohmann::json doc;

  std::filesystem::path base_dir() const { return path.parent_path(); }
  // "file.json#/data/train/source"
  std::string where(const std::string& pointer) const { return path.string() + "#" + pointer; }
};

// Reads and parses the file. Throws InvalidInput naming the file and, for syntax errors, line/column/byte.
PipelineManifest load_pipeline_manifest(const std::filesystem::path& path);

// Applies "POINTER=VALUE" (VALUE is JSON, or a plain string when it is not valid JSON). Throws InvalidInput.
void apply_override(PipelineManifest& manifest, const std::string& assignment);

// Every problem found, in document order. Component types are checked against the registry's listing, without
// loading any library.
std::vector<Problem> validate_pipeline_manifest(const PipelineManifest& manifest, const PluginRegistry& registry);

// Throws InvalidInput listing every problem, one per line, as "<file>#<pointer>: <message>".
void require_valid(const PipelineManifest& manifest, const PluginRegistry& registry);

}  // namespace ramjet::core
