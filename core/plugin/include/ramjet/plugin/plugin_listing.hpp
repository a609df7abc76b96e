// `ramjet plugins`: what was found, where, and why anything was skipped — as JSON or as text.
#pragma once

#include "ramjet/plugin/plugin_registry.hpp"

#include <nlohmann/json.hpp>

#include <iosfwd>

namespace ramjet::core {

// One object per discovered plugin, in discovery order, plus the search path and warnings. With `load`, each
// usable plugin's library is opened and negotiated and the outcome recorded under "load"; a plugin skipped because
// its library file is missing or not a file is recorded there as a failure too.
nlohmann::json list_plugins(PluginRegistry& registry, bool load);

// The same, as aligned text for a terminal.
void print_plugin_listing(const nlohmann::json& listing, std::ostream& out);

// True when `load` was requested and some plugin failed to load (or its library file was missing).
bool listing_has_load_failures(const nlohmann::json& listing);

}  // namespace ramjet::core
