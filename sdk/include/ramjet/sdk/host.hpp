// The host's API table as the plugin sees it: stored once by the entry call (see boundary.hpp), then read from any
// thread. host() for the table itself, log() for a line in the host's log, assign() to hand bytes to the host.
#ifndef RAMJET_SDK_HOST_HPP
#define RAMJET_SDK_HOST_HPP

#include <ramjet/abi.h>
#include <ramjet/sdk/error.hpp>

#include <atomic>
#include <string>
#include <string_view>

// Everything the SDK instantiates in a plugin is hidden explicitly, so two plugins never share a vtable or the
// host table through STB_GNU_UNIQUE symbols, whatever flags the plugin is built with.
#define RAMJET_SDK_HIDDEN [[gnu::visibility("hidden")]]

namespace ramjet {

namespace detail {
// One per plugin library. Set by the entry call; read from any thread.
RAMJET_SDK_HIDDEN inline std::atomic<const ramjet_host_api*> host_table{nullptr};
}  // namespace detail

inline const ramjet_host_api& host() {
  const ramjet_host_api* table = detail::host_table.load(std::memory_order_acquire);
  if (table == nullptr) throw Error(RAMJET_ERR_INTERNAL, "ramjet host API used before the entry call");
  return *table;
}

inline void log(ramjet_log_level level, std::string_view source, std::string_view message) {
  const ramjet_host_api* table = detail::host_table.load(std::memory_order_acquire);
  if (table == nullptr) return;
  table->log(level, std::string(source).c_str(), std::string(message).c_str());
}

inline void assign(ramjet_buffer* buffer, std::string_view bytes) {
  ramjet_status s = host().buffer_assign(buffer, bytes.data(), bytes.size());
  if (s != RAMJET_OK) throw Error(s, "cannot fill a host buffer");
}

}  // namespace ramjet

#endif  // RAMJET_SDK_HOST_HPP
