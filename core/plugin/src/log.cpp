#include "ramjet/plugin/log.hpp"

#include <sys/auxv.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace ramjet::core {
namespace {

std::atomic<int> g_minimum{RAMJET_LOG_INFO};
std::mutex g_write_mutex;

const char* level_name(ramjet_log_level level) {
  switch (level) {
    case RAMJET_LOG_DEBUG: return "debug";
    case RAMJET_LOG_INFO: return "info";
    case RAMJET_LOG_WARNING: return "warning";
    case RAMJET_LOG_ERROR: return "error";
  }
  return "log";
}

}  // namespace

void set_log_level(ramjet_log_level minimum) { g_minimum = minimum; }
ramjet_log_level log_level() { return static_cast<ramjet_log_level>(g_minimum.load()); }

std::optional<ramjet_log_level> log_level_named(std::string_view name) {
  for (const ramjet_log_level level : {RAMJET_LOG_DEBUG, RAMJET_LOG_INFO, RAMJET_LOG_WARNING, RAMJET_LOG_ERROR})
    if (name == level_name(level)) return level;
  return std::nullopt;
}

void log(ramjet_log_level level, std::string_view source, std::string_view message) {
  if (level < g_minimum.load()) return;
  std::string line = "ramjet: ";
  line += level_name(level);
  if (!source.empty()) {
    line += " [";
    line += source;
    line += "]";
  }
  line += ": ";
  line += message;
  line += '\n';
  std::lock_guard lock(g_write_mutex);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

const char* trusted_getenv(const char* name) {
  if (getauxval(AT_SECURE) != 0) return nullptr;
  return std::getenv(name);
}

bool loader_debug_enabled() {
  static const bool enabled = [] {
    const char* v = trusted_getenv("RAMJET_LOADER_DEBUG");
    return v != nullptr && std::strcmp(v, "0") != 0 && *v != '\0';
  }();
  return enabled;
}

void loader_debug(std::string_view message) {
  if (!loader_debug_enabled()) return;
  std::string line = "ramjet: loader: ";
  line += message;
  line += '\n';
  std::lock_guard lock(g_write_mutex);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace ramjet::core
