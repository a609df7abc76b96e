// RAMJET_PLUGIN: the plugin's one exported symbol, listing its components.
#ifndef RAMJET_SDK_PLUGIN_HPP
#define RAMJET_SDK_PLUGIN_HPP

#include <ramjet/abi.h>
#include <ramjet/sdk/boundary.hpp>

// The plugin's one exported symbol. List the components as ramjet::<kind><Class>("name") calls.
#define RAMJET_PLUGIN(NAME, VERSION, ...)                                                                     \
  extern "C" RAMJET_EXPORT ramjet_status ramjet_plugin_entry(const ramjet_host_api* host, uint32_t host_min, \
                                                             uint32_t host_max, const ramjet_plugin** out,   \
                                                             ramjet_error* error) {                          \
    static const ramjet_component components[] = {__VA_ARGS__};                                              \
    static const auto pointers = ::ramjet::detail::pointers_to(components);                                   \
    static ramjet_plugin plugin = {sizeof(ramjet_plugin), RAMJET_ABI_VERSION, NAME, VERSION, pointers.size(), \
                                   pointers.data()};                                                          \
    return ::ramjet::detail::negotiate(host, host_min, host_max, &plugin, out, error);                        \
  }

#endif  // RAMJET_SDK_PLUGIN_HPP
