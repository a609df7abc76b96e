// The quantizer adapter: a C++ class with the members below becomes a ramjet_quantizer_vtable.
#ifndef RAMJET_SDK_QUANTIZER_HPP
#define RAMJET_SDK_QUANTIZER_HPP

#include <ramjet/abi.h>
#include <ramjet/sdk/boundary.hpp>
#include <ramjet/sdk/example.hpp>
#include <ramjet/sdk/host.hpp>

#include <nlohmann/json.hpp>

#include <string_view>

namespace ramjet {

// Required: T(const Config&); void observe(std::string_view tensor, const DLTensor& value);
//           nlohmann::json quantize(const nlohmann::json& graph, Example& params, Example& out_params);

template <class T>
struct QuantizerAdapter {
  static ramjet_status observe(void* self, const char* name, const DLTensor* value, ramjet_error* error) noexcept {
    return detail::guard(error, [&] { detail::self_of<T>(self).observe(name, *value); });
  }
  static ramjet_status quantize(void* self, const char* graph, ramjet_example* params, ramjet_buffer* out_graph,
                                ramjet_example* out_params, ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      Example in(params), out(out_params);
      assign(out_graph, detail::self_of<T>(self).quantize(nlohmann::json::parse(graph), in, out).dump());
    });
  }
};

template <class T>
RAMJET_SDK_HIDDEN inline constexpr ramjet_quantizer_vtable quantizer_vtable = {sizeof(ramjet_quantizer_vtable), RAMJET_ABI_VERSION,
                                                             &detail::create<T>, &detail::destroy<T>,
                                                             &QuantizerAdapter<T>::observe,
                                                             &QuantizerAdapter<T>::quantize};

template <class T>
ramjet_component quantizer(const char* name) {
  return detail::component<T>(RAMJET_KIND_QUANTIZER, name, &quantizer_vtable<T>);
}

}  // namespace ramjet

#endif  // RAMJET_SDK_QUANTIZER_HPP
