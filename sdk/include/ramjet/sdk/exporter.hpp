// The exporter adapter: a C++ class with the members below becomes a ramjet_exporter_vtable.
#ifndef RAMJET_SDK_EXPORTER_HPP
#define RAMJET_SDK_EXPORTER_HPP

#include <ramjet/abi.h>
#include <ramjet/sdk/boundary.hpp>
#include <ramjet/sdk/example.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>

namespace ramjet {

// Required: T(const Config&); void export_model(const nlohmann::json& graph, Example& params,
//                                              const std::filesystem::path& path);

template <class T>
struct ExporterAdapter {
  static ramjet_status export_model(void* self, const char* graph, ramjet_example* params, const char* path,
                                    ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      Example in(params);
      detail::self_of<T>(self).export_model(nlohmann::json::parse(graph), in, std::filesystem::path(path));
    });
  }
};

template <class T>
RAMJET_SDK_HIDDEN inline constexpr ramjet_exporter_vtable exporter_vtable = {sizeof(ramjet_exporter_vtable), RAMJET_ABI_VERSION,
                                                           &detail::create<T>, &detail::destroy<T>,
                                                           &ExporterAdapter<T>::export_model};

template <class T>
ramjet_component exporter(const char* name) {
  return detail::component<T>(RAMJET_KIND_EXPORTER, name, &exporter_vtable<T>);
}

}  // namespace ramjet

#endif  // RAMJET_SDK_EXPORTER_HPP
