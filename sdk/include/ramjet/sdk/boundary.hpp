// The boundary between C and C++: guard() turns every exception into a status and message; create/destroy and the
// check_config slot build a component class from its Config; negotiate() runs inside the entry call. Every adapter
// (data_source.hpp ... backend.hpp) and RAMJET_PLUGIN (plugin.hpp) stand on these.
#ifndef RAMJET_SDK_BOUNDARY_HPP
#define RAMJET_SDK_BOUNDARY_HPP

#include <ramjet/abi.h>
#include <ramjet/sdk/config.hpp>
#include <ramjet/sdk/error.hpp>
#include <ramjet/sdk/fields.hpp>
#include <ramjet/sdk/host.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <new>
#include <string>
#include <system_error>

namespace ramjet {

namespace detail {

inline void report(ramjet_error* error, ramjet_status status, const char* message) noexcept {
  const ramjet_host_api* table = host_table.load(std::memory_order_acquire);
  if (table != nullptr && error != nullptr) table->error_set(error, status, message);
}

// Runs `body`, turning every exception into a status and message.
template <class F>
ramjet_status guard(ramjet_error* error, F&& body) noexcept {
  try {
    body();
    return RAMJET_OK;
  } catch (const Error& e) {
    const ramjet_status status = e.status() == RAMJET_OK ? RAMJET_ERR_INTERNAL : e.status();
    report(error, status, e.what());
    return status;
  } catch (const nlohmann::json::exception& e) {
    report(error, RAMJET_ERR_INVALID_ARGUMENT, e.what());
    return RAMJET_ERR_INVALID_ARGUMENT;
  } catch (const std::system_error& e) {  // includes std::filesystem::filesystem_error and ios_base::failure
    report(error, RAMJET_ERR_IO, e.what());
    return RAMJET_ERR_IO;
  } catch (const std::bad_alloc&) {
    report(error, RAMJET_ERR_OUT_OF_MEMORY, "out of memory");
    return RAMJET_ERR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    report(error, RAMJET_ERR_INTERNAL, e.what());
    return RAMJET_ERR_INTERNAL;
  } catch (...) {
    report(error, RAMJET_ERR_INTERNAL, "unknown exception");
    return RAMJET_ERR_INTERNAL;
  }
}

// A component class may declare its configuration (`static ramjet::Fields fields();`) and add rules across fields
// (`static void check(const nlohmann::json& config, ramjet::Problems& problems);`, run when the fields are fine).
template <class T>
concept DeclaresFields = requires { { T::fields() } -> std::convertible_to<Fields>; };
template <class T>
concept ChecksConfig = requires(const nlohmann::json& config, Problems& problems) { T::check(config, problems); };

// And a component that reads files may check that they are there
// (`static void check_files(const ramjet::Config& config, ramjet::Problems& problems);`, run by check_config when
// everything else is fine): `ramjet validate` then names a missing file before anything runs. Config resolves
// relative paths against the manifest's folder.
template <class T>
concept ChecksFiles = requires(const Config& config, Problems& problems) { T::check_files(config, problems); };

template <class T>
Problems config_problems(const nlohmann::json& config) {
  Problems problems;
  if constexpr (DeclaresFields<T>) T::fields().check(config, "", problems);
  if constexpr (ChecksConfig<T>)
    if (problems.empty()) T::check(config, problems);
  return problems;
}

// The check_config slot (ABI 2): the same judgement create() applies, without creating anything.
template <class T>
ramjet_status check_config(const ramjet_create_info* info, ramjet_buffer* out, ramjet_error* error) noexcept {
  return guard(error, [&] {
    if (info == nullptr || out == nullptr) throw Error(RAMJET_ERR_INVALID_ARGUMENT, "null check_config arguments");
    Config config(*info);
    Problems problems = config_problems<T>(config.json());
    if constexpr (ChecksFiles<T>)
      if (problems.empty()) T::check_files(config, problems);
    assign(out, problems_to_json(problems).dump());
  });
}

template <class T>
inline constexpr auto check_config_slot = [] {
  if constexpr (DeclaresFields<T> || ChecksConfig<T> || ChecksFiles<T>) return &check_config<T>;
  else return static_cast<decltype(&check_config<T>)>(nullptr);
}();

template <class T>
ramjet_status create(const ramjet_create_info* info, void** out_self, ramjet_error* error) noexcept {
  return guard(error, [&] {
    if (info == nullptr || out_self == nullptr) throw Error(RAMJET_ERR_INVALID_ARGUMENT, "null create arguments");
    Config config(*info);
    if constexpr (DeclaresFields<T> || ChecksConfig<T>) {
      const Problems problems = config_problems<T>(config.json());
      if (!problems.empty()) {
        std::string text;
        for (const auto& p : problems) text += (text.empty() ? "" : "\n") + config.where_pointer(p.pointer) + ": " + p.message;
        throw Error(RAMJET_ERR_INVALID_ARGUMENT, text);
      }
    }
    *out_self = new T(config);
  });
}

template <class T>
void destroy(void* self) noexcept {
  delete static_cast<T*>(self);
}

template <class T>
T& self_of(void* self) { return *static_cast<T*>(self); }

template <class T>
ramjet_component component(ramjet_component_kind kind, const char* name, const void* vtable) {
  return {sizeof(ramjet_component), RAMJET_ABI_VERSION, kind, 0, name, vtable, check_config_slot<T>};
}

template <size_t N>
std::array<const ramjet_component*, N> pointers_to(const ramjet_component (&components)[N]) {
  std::array<const ramjet_component*, N> out{};
  for (size_t i = 0; i < N; ++i) out[i] = &components[i];
  return out;
}

// The oldest ABI version this SDK's plugins can still serve. Raise it only when a version is dropped.
inline constexpr uint32_t kAbiMin = 1;

inline ramjet_status negotiate(const ramjet_host_api* host, uint32_t host_min, uint32_t host_max,
                               ramjet_plugin* plugin, const ramjet_plugin** out, ramjet_error* error) noexcept {
  if (host == nullptr || out == nullptr || plugin == nullptr) return RAMJET_ERR_INVALID_ARGUMENT;
  if (host->struct_size < RAMJET_HOST_API_V1_SIZE) return RAMJET_ERR_VERSION_MISMATCH;  // cannot even report
  host_table.store(host, std::memory_order_release);
  return guard(error, [&] {
    // The newest version both sides speak.
    const uint32_t chosen = std::min<uint32_t>(RAMJET_ABI_VERSION, host_max);
    if (chosen < std::max<uint32_t>(kAbiMin, host_min))
      throw Error(RAMJET_ERR_VERSION_MISMATCH, "plugin '" + std::string(plugin->name ? plugin->name : "?") +
                                                   "' speaks ABI " + std::to_string(kAbiMin) + ".." +
                                                   std::to_string(RAMJET_ABI_VERSION) + ", the host speaks " +
                                                   std::to_string(host_min) + ".." + std::to_string(host_max));
    plugin->abi_version = chosen;
    *out = plugin;
  });
}

}  // namespace detail

}  // namespace ramjet

// An optional vtable slot: the adapter function when the component class has the member, else null. The
// discarded branch is never instantiated, so a class without the member still compiles. For the adapter headers
// only; the umbrella ramjet/sdk.hpp undefines it at its end, as it always has.
#define RAMJET_SDK_OPTIONAL_SLOT(present, function)                 \
  [] {                                                              \
    if constexpr (present) return function;                         \
    else return static_cast<decltype(function)>(nullptr);           \
  }()

#endif  // RAMJET_SDK_BOUNDARY_HPP
