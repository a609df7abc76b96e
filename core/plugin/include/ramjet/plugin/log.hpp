// Process-wide logging to stderr. Plugins reach it through the host API's log slot.
#pragma once

#include <ramjet/abi.h>

#include <optional>
#include <string_view>

namespace ramjet::core {

void set_log_level(ramjet_log_level minimum);
ramjet_log_level log_level();
// "debug", "info", "warning" or "error" as a level; nothing for any other word.
std::optional<ramjet_log_level> log_level_named(std::string_view name);
void log(ramjet_log_level level, std::string_view source, std::string_view message);

// True when RAMJET_LOADER_DEBUG=1 asks the loader to explain every decision.
bool loader_debug_enabled();
void loader_debug(std::string_view message);

// Environment lookup that returns null in privileged (setuid/setgid) processes, as the loader must not trust it.
const char* trusted_getenv(const char* name);

}  // namespace ramjet::core
