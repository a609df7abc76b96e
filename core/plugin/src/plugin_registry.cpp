#include "ramjet/plugin/plugin_registry.hpp"

#include "ramjet/plugin/failure.hpp"
#include "ramjet/plugin/log.hpp"

#include <boost/dll/runtime_symbol_info.hpp>

#include <algorithm>
#include <set>
#include <sstream>

#ifndef RAMJET_PLUGIN_DIR_FROM_BIN
#define RAMJET_PLUGIN_DIR_FROM_BIN "../lib/ramjet/plugins"
#endif

namespace ramjet::core {
namespace fs = std::filesystem;
namespace {

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> parts;
  std::string current;
  for (char c : text) {
    if (c == sep) {
      if (!current.empty()) parts.push_back(current);
      current.clear();
    } else if (c != ' ') {
      current += c;
    }
  }
  if (!current.empty()) parts.push_back(current);
  return parts;
}

bool contains(const std::vector<std::string>& list, const std::string& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

// Manifests in a directory and its immediate subdirectories (one folder per plugin is allowed), sorted by path
// so the order never depends on the file system.
std::vector<fs::path> manifests_in(const fs::path& dir) {
  std::vector<fs::path> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_regular_file(ec) && entry.path().extension() == ".json") {
      found.push_back(entry.path());
    } else if (entry.is_directory(ec)) {
      std::error_code sub_ec;
      for (const auto& sub : fs::directory_iterator(entry.path(), sub_ec))
        if (sub.is_regular_file(sub_ec) && sub.path().extension() == ".json") found.push_back(sub.path());
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace

DiscoveryOptions discovery_options_from_environment() {
  DiscoveryOptions options;
  if (const char* p = trusted_getenv("RAMJET_PLUGIN_PATH"))
    for (const auto& dir : split(p, ':')) options.search_path.emplace_back(dir);
  std::error_code ec;
  fs::path exe = boost::dll::program_location(ec);
  // Wherever the install went (or the build tree, which mirrors it): the plugin folder relative to the binary's,
  // as the install layout put them. No configure-time prefix is baked in.
  if (!ec) options.search_path.push_back((exe.parent_path() / RAMJET_PLUGIN_DIR_FROM_BIN).lexically_normal());
  // Drop duplicates (the build tree and the install prefix can be the same place), keeping the first.
  std::vector<fs::path> unique;
  for (const auto& dir : options.search_path) {
    fs::path canonical = fs::weakly_canonical(dir, ec);
    if (ec) canonical = dir;
    if (std::find(unique.begin(), unique.end(), canonical) == unique.end()) unique.push_back(canonical);
  }
  options.search_path = unique;
  if (const char* s = trusted_getenv("RAMJET_PLUGINS_SELECT")) options.select = split(s, ',');
  if (const char* d = trusted_getenv("RAMJET_PLUGINS_DISABLE")) options.disable = split(d, ',');
  return options;
}

std::string ComponentRef::label() const {
  return std::string(kind_name(component->kind)) + " '" + component->name + "' (plugin " +
         library->manifest().name + ")";
}

PluginRegistry::PluginRegistry(DiscoveryOptions options) : options_(std::move(options)) { discover(); }

void PluginRegistry::discover() {
  std::map<std::string, size_t> by_name;
  for (const auto& dir : options_.search_path) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      loader_debug("search path " + dir.string() + ": not a directory, skipped");
      continue;
    }
    loader_debug("searching " + dir.string());
    for (const auto& file : manifests_in(dir)) {
      PluginEntry entry;
      entry.manifest_path = file;
      ManifestParse parse = read_plugin_manifest(file);
      if (!parse.manifest) {
        entry.status = "skipped: invalid manifest " + file.string() + ": " + parse.describe();
        log(RAMJET_LOG_WARNING, "loader", entry.status.substr(9));
      } else {
        entry.manifest = std::move(parse.manifest);
        const std::string name = entry.manifest->name;
        const auto& m = *entry.manifest;
        std::error_code lib_ec;
        if (!options_.select.empty() && !contains(options_.select, name)) {
          entry.status = "skipped: not in RAMJET_PLUGINS_SELECT";
        } else if (contains(options_.disable, name)) {
          entry.status = "skipped: disabled by RAMJET_PLUGINS_DISABLE";
        } else if (by_name.count(name)) {
          entry.status = "skipped: plugin name '" + name + "' is already provided by " +
                         plugins_[by_name[name]].manifest_path.string() + " (earlier in the search path)";
          warnings_.push_back(entry.status.substr(9) + "; ignoring " + file.string());
        } else if (m.abi_max < 1 || m.abi_min > RAMJET_ABI_VERSION) {
          entry.status = "skipped: ABI range " + std::to_string(m.abi_min) + ".." + std::to_string(m.abi_max) +
                         " does not overlap the host's 1.." + std::to_string(RAMJET_ABI_VERSION);
        } else if (!fs::is_regular_file(m.library, lib_ec)) {
          entry.status = "skipped: library file not found: " + m.library.string();
        } else {
          entry.usable = true;
          entry.status = "ok";
          by_name[name] = plugins_.size();
        }
      }
      loader_debug(file.string() + ": " + entry.status);
      plugins_.push_back(std::move(entry));
    }
  }
  // Components: the first usable plugin in discovery order wins a (kind, name); later ones are shadowed.
  for (size_t i = 0; i < plugins_.size(); ++i) {
    PluginEntry& entry = plugins_[i];
    if (!entry.usable) continue;
    for (const auto& [kind, names] : entry.manifest->provides) {
      for (const auto& n : names) {
        auto key = std::make_pair(static_cast<int>(kind), n);
        auto [it, inserted] = providers_.emplace(key, i);
        if (inserted) continue;
        const PluginEntry& winner = plugins_[it->second];
        std::string message = std::string(kind_name(kind)) + " '" + n + "' is offered by both plugin '" +
                              winner.name() + "' (" + winner.manifest_path.string() + ") and plugin '" +
                              entry.name() + "' (" + entry.manifest_path.string() + "); using '" + winner.name() +
                              "', the first in search-path order";
        entry.notes.push_back("shadowed: " + std::string(kind_name(kind)) + " '" + n + "' (provided by '" +
                              winner.name() + "')");
        warnings_.push_back(message);
        loader_debug(message);
      }
    }
  }
}

const PluginEntry* PluginRegistry::provider(ramjet_component_kind kind, std::string_view name) const {
  auto it = providers_.find({static_cast<int>(kind), std::string(name)});
  return it == providers_.end() ? nullptr : &plugins_[it->second];
}

std::vector<std::string> PluginRegistry::available(ramjet_component_kind kind) const {
  std::vector<std::string> names;
  for (const auto& [key, index] : providers_)
    if (key.first == static_cast<int>(kind)) names.push_back(key.second);
  return names;  // std::map keeps them sorted
}

std::shared_ptr<PluginLibrary> PluginRegistry::load(const PluginEntry& entry) {
  if (!entry.manifest) throw RuntimeFailure("cannot load " + entry.manifest_path.string() + ": " + entry.status);
  const std::string key = entry.manifest_path.string();
  if (auto existing = loaded_[key].lock()) return existing;
  auto library = PluginLibrary::load(*entry.manifest);
  loaded_[key] = library;
  return library;
}

ComponentRef PluginRegistry::component(ramjet_component_kind kind, std::string_view name) {
  const PluginEntry* entry = provider(kind, name);
  if (entry == nullptr) {
    std::string list;
    for (const auto& n : available(kind)) list += (list.empty() ? "" : ", ") + n;
    // A plugin that offers it but was skipped explains more than "not found".
    std::string skipped;
    for (const auto& p : plugins_) {
      if (p.usable || !p.manifest || !p.manifest->provides.count(kind)) continue;
      const auto& names = p.manifest->provides.at(kind);
      if (std::find(names.begin(), names.end(), name) != names.end())
        skipped += "; plugin '" + p.name() + "' (" + p.manifest_path.string() + ") offers it but was " + p.status;
    }
    throw InvalidInput("no plugin provides " + std::string(kind_name(kind)) + " '" + std::string(name) +
                       "' (available: " + (list.empty() ? "none" : list) + ")" + skipped +
                       "; see `ramjet plugins`");
  }
  ComponentRef ref;
  ref.library = load(*entry);
  ref.component = ref.library->find(kind, name);
  if (ref.component == nullptr)  // load() already checked the manifest against the library
    throw RuntimeFailure("plugin '" + entry->name() + "' does not provide " + std::string(kind_name(kind)) + " '" +
                         std::string(name) + "'");
  return ref;
}

}  // namespace ramjet::core
