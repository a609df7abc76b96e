// The precision_policy adapter: a C++ class with the members below becomes a ramjet_precision_policy_vtable.
#ifndef RAMJET_SDK_PRECISION_POLICY_HPP
#define RAMJET_SDK_PRECISION_POLICY_HPP

#include <ramjet/abi.h>
#include <ramjet/sdk/boundary.hpp>
#include <ramjet/sdk/error.hpp>
#include <ramjet/sdk/host.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace ramjet {

// Required: T(const Config&); ramjet_layer_dtypes layer_dtypes(const nlohmann::json& layer) const;
//           float loss_scale() const; bool update(bool found_nonfinite)  (returns: skip this step)
// Optional: std::string save_state() const; void restore_state(std::string_view).

template <class T>
struct PrecisionPolicyAdapter {
  static ramjet_status layer_dtypes(void* self, const char* layer_json, ramjet_layer_dtypes* out,
                                    ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      ramjet_layer_dtypes d = detail::self_of<T>(self).layer_dtypes(nlohmann::json::parse(layer_json));
      d.abi_version = RAMJET_ABI_VERSION;
      const uint32_t room = out->struct_size;  // the caller's allocation: never write past it
      if (room < RAMJET_LAYER_DTYPES_V1_SIZE) throw Error(RAMJET_ERR_VERSION_MISMATCH, "layer_dtypes: out struct too small");
      d.struct_size = static_cast<uint32_t>(std::min<size_t>(room, sizeof d));
      std::memcpy(out, &d, d.struct_size);
    });
  }
  static ramjet_status loss_scale(void* self, float* out, ramjet_error* error) noexcept {
    return detail::guard(error, [&] { *out = detail::self_of<T>(self).loss_scale(); });
  }
  static ramjet_status update(void* self, int32_t nonfinite, int32_t* skip, ramjet_error* error) noexcept {
    return detail::guard(error, [&] { *skip = detail::self_of<T>(self).update(nonfinite != 0) ? 1 : 0; });
  }
  static ramjet_status save_state(void* self, ramjet_buffer* out, ramjet_error* error) noexcept {
    return detail::guard(error, [&] { assign(out, detail::self_of<T>(self).save_state()); });
  }
  static ramjet_status restore_state(void* self, const void* state, size_t size, ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      detail::self_of<T>(self).restore_state(std::string_view(static_cast<const char*>(state), size));
    });
  }
};

template <class T>
RAMJET_SDK_HIDDEN inline constexpr ramjet_precision_policy_vtable precision_policy_vtable = {
    sizeof(ramjet_precision_policy_vtable), RAMJET_ABI_VERSION, &detail::create<T>, &detail::destroy<T>,
    &PrecisionPolicyAdapter<T>::layer_dtypes, &PrecisionPolicyAdapter<T>::loss_scale, &PrecisionPolicyAdapter<T>::update,
    RAMJET_SDK_OPTIONAL_SLOT((requires(const T& t) { t.save_state(); }), &PrecisionPolicyAdapter<T>::save_state),
    RAMJET_SDK_OPTIONAL_SLOT((requires(T& t) { t.restore_state(std::string_view{}); }), &PrecisionPolicyAdapter<T>::restore_state)};

template <class T>
ramjet_component precision_policy(const char* name) {
  return detail::component<T>(RAMJET_KIND_PRECISION_POLICY, name, &precision_policy_vtable<T>);
}

}  // namespace ramjet

#endif  // RAMJET_SDK_PRECISION_POLICY_HPP
