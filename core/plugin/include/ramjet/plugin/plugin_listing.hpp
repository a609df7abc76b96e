// `ramjet plugins`: what was found, where, and why anything was skipped — as JSON or as text.
#pragma once

#include "ramjet/plugin/plugin_registry.hpp"

#include <nlohmann/json.hpp>

#include <iosfwd>

namespace ramjet::core {

// One object per discovered plugin, in discovery order, plus the search path and warnings. With `load`, each
// usable plugin's library is opened and negotiated and the outcome recorded under "load".
nlohmann::json list_plugins(PluginRegistry& registry, bool load);

// The same, as aligned text for a terminal.
void print_plugin_listing(const nlohmann::json& listing, std::ostream& out);

// True when `load` was requested and some usable plugin failed to load.
bool listing_has_load_failures(const nlohmann::json& listing);

}  // namespace ramjet::core
