// Plugin manifests: the JSON file beside each plugin library that lets the host list and filter plugins
// without loading them.
#pragma once

#include <ramjet/abi.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ramjet::core {

// Component kinds this host knows (abi.h numbers them 0..kKindCount-1).
inline constexpr int32_t kKindCount = 7;

// The manifest format this host reads (major version must match; minor may be newer).
inline constexpr int kPluginManifestMajor = 1;

std::string_view kind_name(ramjet_component_kind kind);
std::optional<ramjet_component_kind> kind_from_name(std::string_view name);

struct PluginManifest {
  std::filesystem::path path;     // the manifest file itself
  std::string file_format_version;
  std::string name;
  std::string version;
  uint32_t abi_min = 0;
  uint32_t abi_max = 0;
  std::filesystem::path library;  // resolved against the manifest's directory
  std::map<ramjet_component_kind, std::vector<std::string>> provides;
};

struct ManifestProblem {
  std::string pointer;  // JSON pointer of the offending field ("" for the whole document)
  std::string message;
};

struct ManifestParse {
  std::optional<PluginManifest> manifest;  // set only when there are no problems
  std::vector<ManifestProblem> problems;
  // "<file>#<pointer>: <message>; ..." for one-line reasons.
  std::string describe() const;
};

ManifestParse read_plugin_manifest(const std::filesystem::path& file);

}  // namespace ramjet::core
