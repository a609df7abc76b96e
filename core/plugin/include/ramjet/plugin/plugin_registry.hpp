// Discovery and lazy loading of plugins. Listing reads manifests only; a library is opened the first time a
// component of it is asked for, and stays open while anything made from it is alive.
#pragma once

#include "ramjet/plugin/plugin_library.hpp"
#include "ramjet/plugin/plugin_manifest.hpp"

#include <filesystem>
#include <map>
#include <mutex>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ramjet::core {

struct DiscoveryOptions {
  std::vector<std::filesystem::path> search_path;  // highest priority first
  std::vector<std::string> select;                 // when non-empty, only these plugin names are used
  std::vector<std::string> disable;                // these plugin names are never used
};

// RAMJET_PLUGIN_PATH (':'-separated, first wins), then the plugin folder beside the executable as the install
// layout puts it (<executable dir>/../lib/ramjet/plugins: the build tree, or wherever the install went);
// RAMJET_PLUGINS_SELECT and
// RAMJET_PLUGINS_DISABLE (comma-separated names). The environment is ignored in privileged processes.
DiscoveryOptions discovery_options_from_environment();

struct PluginEntry {
  std::filesystem::path manifest_path;
  std::optional<PluginManifest> manifest;  // absent when the manifest is invalid
  bool usable = false;
  std::string status;               // "ok" or "skipped: <reason>"
  // Set when skipped because the library file cannot be one (missing, a directory, a FIFO): `ramjet plugins
  // --load` reports it as a load failure, since the install is broken rather than filtered.
  std::string library_problem;
  std::vector<std::string> notes;   // e.g. components shadowed by an earlier plugin

  std::string name() const { return manifest ? manifest->name : manifest_path.stem().string(); }
};

// A component found in a loaded library. Holds the library open.
struct ComponentRef {
  std::shared_ptr<PluginLibrary> library;
  const ramjet_component* component = nullptr;

  template <class VTable>
  const VTable& vtable() const { return *static_cast<const VTable*>(component->vtable); }
  // "transform 'normalize' (plugin stock_transforms)"
  std::string label() const;
};

class PluginRegistry {
 public:
  explicit PluginRegistry(DiscoveryOptions options);

  const DiscoveryOptions& options() const { return options_; }
  const std::vector<PluginEntry>& plugins() const { return plugins_; }
  // Warnings produced by discovery (duplicate names, shadowed components), in discovery order.
  const std::vector<std::string>& warnings() const { return warnings_; }

  // The entry whose component wins for (kind, name), or null.
  const PluginEntry* provider(ramjet_component_kind kind, std::string_view name) const;
  // Every selectable component name of a kind, sorted.
  std::vector<std::string> available(ramjet_component_kind kind) const;
  // Why (kind, name) has no provider although a manifest may have offered it: for each skipped manifest that
  // declares it, and each manifest that could not be read, "; plugin 'p' (/dir/p.json) declares it but was
  // skipped: <why>". Empty when there is none. Meant to be appended to a "no plugin provides" message.
  std::string skipped_declarations(ramjet_component_kind kind, std::string_view name) const;

  // Opens (or reuses) the entry's library. Throws RuntimeFailure with the reason.
  std::shared_ptr<PluginLibrary> load(const PluginEntry& entry);
  // Finds and loads the component. Throws InvalidInput when no plugin offers it (listing those that exist),
  // RuntimeFailure when its plugin fails to load. Safe to call from several threads at once (ranks run as threads
  // in tests, and an embedding application may build components in parallel): each library is loaded once.
  ComponentRef component(ramjet_component_kind kind, std::string_view name);

 private:
  void discover();

  DiscoveryOptions options_;
  std::vector<PluginEntry> plugins_;
  std::vector<std::string> warnings_;
  std::map<std::pair<int, std::string>, size_t> providers_;  // (kind, name) -> index into plugins_
  std::mutex loading_;  // guards loaded_
  std::map<std::string, std::weak_ptr<PluginLibrary>> loaded_;  // by manifest path
};

}  // namespace ramjet::core
