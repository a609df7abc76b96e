#include "ramjet/plugin/plugin_registry.hpp"

#include "ramjet/plugin/elf_check.hpp"
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
        entry.status = "skipped: invalid manifest " + file.string() + ": " + elide(parse.describe(), 1000);
        log(RAMJET_LOG_WARNING, "loader", entry.status.substr(9));
      } else {
        entry.manifest = std::move(parse.manifest);
        const std::string name = entry.manifest->name;
        const auto& m = *entry.manifest;
        if (!options_.select.empty() && !contains(options_.select, name)) {
          entry.status = "skipped: not in RAMJET_PLUGINS_SELECT";
        } else if (contains(options_.disable, name)) {
          entry.status = "skipped: disabled by RAMJET_PLUGINS_DISABLE";
        } else if (by_name.count(name)) {
          entry.status = "skipped: plugin name '" + elide(name) + "' is already provided by " +
                         plugins_[by_name[name]].manifest_path.string() + " (earlier in the search path)";
          warnings_.push_back(entry.status.substr(9) + "; ignoring " + file.string());
        } else if (m.abi_max < 1 || m.abi_min > RAMJET_ABI_VERSION) {
          entry.status = "skipped: ABI range " + std::to_string(m.abi_min) + ".." + std::to_string(m.abi_max) +
                         " does not overlap the host's 1.." + std::to_string(RAMJET_ABI_VERSION);
        } else if (std::string why = library_file_problem(m.library); !why.empty()) {
          entry.library_problem = why + ": " + elide(m.library.string());
          entry.status = "skipped: " + entry.library_problem;
          log(RAMJET_LOG_WARNING, "loader", "plugin '" + elide(name) + "' (" + file.string() + ") " + entry.status);
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
        std::string message = std::string(kind_name(kind)) + " '" + elide(n) + "' is offered by both plugin '" +
                              elide(winner.name()) + "' (" + winner.manifest_path.string() + ") and plugin '" +
                              elide(entry.name()) + "' (" + entry.manifest_path.string() + "); using '" +
                              elide(winner.name()) + "', the first in search-path order";
        entry.notes.push_back("shadowed: " + std::string(kind_name(kind)) + " '" + elide(n) + "' (provided by '" +
                              elide(winner.name()) + "')");
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
  std::lock_guard lock(loading_);
  if (auto existing = loaded_[key].lock()) return existing;
  auto library = PluginLibrary::load(*entry.manifest);
  loaded_[key] = library;
  return library;
}

std::string PluginRegistry::skipped_declarations(ramjet_component_kind kind, std::string_view name) const {
  // A few are enough to act on; `ramjet plugins` lists them all.
  constexpr size_t kShown = 3;
  constexpr size_t kReasonLimit = 300;
  std::vector<std::string> notes;
  for (const auto& p : plugins_) {
    if (p.usable) continue;
    std::string why = p.status;
    for (const std::string& prefix : {std::string("skipped: "), "invalid manifest " + p.manifest_path.string() + ": "})
      if (why.rfind(prefix, 0) == 0) why.erase(0, prefix.size());
    if (!p.manifest) {  // unreadable: it may be the very manifest that would have provided it
      notes.push_back(p.manifest_path.string() + " may declare it but is not a valid plugin manifest: " +
                      why.substr(0, kReasonLimit) + (why.size() > kReasonLimit ? "..." : ""));
      continue;
    }
    auto declared = p.manifest->provides.find(kind);
    if (declared == p.manifest->provides.end()) continue;
    if (std::find(declared->second.begin(), declared->second.end(), name) == declared->second.end()) continue;
    notes.push_back("plugin '" + elide(p.name()) + "' (" + p.manifest_path.string() + ") declares it but was skipped: " +
                    why.substr(0, kReasonLimit) + (why.size() > kReasonLimit ? "..." : ""));
  }
  std::string out;
  for (size_t i = 0; i < std::min(notes.size(), kShown); ++i) out += "; " + notes[i];
  if (notes.size() > kShown) out += "; and " + std::to_string(notes.size() - kShown) + " more (see `ramjet plugins`)";
  return out;
}

ComponentRef PluginRegistry::component(ramjet_component_kind kind, std::string_view name) {
  const PluginEntry* entry = provider(kind, name);
  if (entry == nullptr) {
    std::string list;
    for (const auto& n : available(kind)) list += (list.empty() ? "" : ", ") + n;
    throw InvalidInput("no plugin provides " + std::string(kind_name(kind)) + " '" + elide(name) +
                       "' (available: " + (list.empty() ? "none" : list) + ")" + skipped_declarations(kind, name) +
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
