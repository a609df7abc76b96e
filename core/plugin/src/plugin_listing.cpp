#include "ramjet/plugin/plugin_listing.hpp"

#include <ostream>

namespace ramjet::core {

nlohmann::json list_plugins(PluginRegistry& registry, bool load) {
  nlohmann::json out;
  out["search_path"] = nlohmann::json::array();
  for (const auto& dir : registry.options().search_path) out["search_path"].push_back(dir.string());
  out["plugins"] = nlohmann::json::array();
  for (const auto& entry : registry.plugins()) {
    nlohmann::json p;
    p["name"] = entry.name();
    p["manifest"] = entry.manifest_path.string();
    if (entry.manifest) {
      const auto& m = *entry.manifest;
      p["version"] = m.version;
      p["abi"] = {{"min", m.abi_min}, {"max", m.abi_max}};
      p["library"] = m.library.string();
      nlohmann::json components = nlohmann::json::object();
      for (const auto& [kind, names] : m.provides) components[std::string(kind_name(kind))] = names;
      p["components"] = components;
    }
    p["status"] = entry.status;
    if (!entry.notes.empty()) p["notes"] = entry.notes;
    if (load && entry.usable) {
      try {
        auto library = registry.load(entry);
        p["load"] = {{"ok", true}, {"abi", library->abi_version()}};
      } catch (const std::exception& e) {
        p["load"] = {{"ok", false}, {"error", e.what()}};
      }
    } else if (load && !entry.library_problem.empty()) {
      // Asked to load everything: a manifest whose library cannot be one is a broken install, not a filter.
      p["load"] = {{"ok", false},
                   {"error", "cannot load plugin '" + entry.name() + "' (manifest " + entry.manifest_path.string() +
                                 "): " + entry.library_problem}};
    }
    out["plugins"].push_back(p);
  }
  out["warnings"] = registry.warnings();
  return out;
}

bool listing_has_load_failures(const nlohmann::json& listing) {
  for (const auto& p : listing["plugins"])
    if (p.contains("load") && !p["load"]["ok"].get<bool>()) return true;
  return false;
}

void print_plugin_listing(const nlohmann::json& listing, std::ostream& out) {
  // The JSON listing keeps every byte; the text a person reads cuts what a manifest made long.
  auto text = [](const nlohmann::json& value) { return elide(value.get<std::string>()); };
  out << "search path:\n";
  for (const auto& dir : listing["search_path"]) out << "  " << text(dir) << "\n";
  if (listing["plugins"].empty()) out << "no plugins found\n";
  for (const auto& p : listing["plugins"]) {
    out << text(p["name"]);
    if (p.contains("version")) out << " " << text(p["version"]);
    if (p.contains("abi")) out << "  abi " << p["abi"]["min"] << ".." << p["abi"]["max"];
    out << "  " << elide(p["status"].get<std::string>(), 2000) << "\n";
    out << "  manifest " << text(p["manifest"]) << "\n";
    if (p.contains("library")) out << "  library  " << text(p["library"]) << "\n";
    if (p.contains("components"))
      for (const auto& [kind, names] : p["components"].items()) {
        std::string line = "  " + kind + ":";
        for (const auto& n : names) line += " " + n.get<std::string>();
        out << elide(line, 2000) << "\n";
      }
    if (p.contains("notes"))
      for (const auto& n : p["notes"]) out << "  note: " << text(n) << "\n";
    if (p.contains("load"))
      out << "  load: "
          << (p["load"]["ok"].get<bool>() ? "ok" : "FAILED: " + elide(p["load"]["error"].get<std::string>(), 2000))
          << "\n";
  }
  for (const auto& w : listing["warnings"]) out << "warning: " << elide(w.get<std::string>(), 2000) << "\n";
}

}  // namespace ramjet::core
