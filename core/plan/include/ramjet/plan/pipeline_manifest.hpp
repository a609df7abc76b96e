// The pipeline manifest a user writes (`ramjet run pipeline.json`) as loaded: the file, its JSON, and `--set`
// overrides applied to it. Nothing reads its fields but the plan reader (plan.hpp).
#pragma once

#include "ramjet/plugin/location.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

namespace ramjet::core {

struct PipelineManifest {
  std::filesystem::path path;
  nlohmann::json doc;

  Origin origin() const { return Origin{path}; }
  std::filesystem::path base_dir() const { return path.parent_path(); }
  // "file.json#/data/train/source"
  std::string where(const std::string& pointer) const { return path.string() + "#" + pointer; }
};

// Reads and parses the file. Throws InvalidInput naming the file and, for syntax errors, line/column/byte.
PipelineManifest load_pipeline_manifest(const std::filesystem::path& path);

// Applies "POINTER=VALUE" (VALUE is JSON, or a plain string when it is not valid JSON). Throws InvalidInput.
void apply_override(PipelineManifest& manifest, const std::string& assignment);

}  // namespace ramjet::core
