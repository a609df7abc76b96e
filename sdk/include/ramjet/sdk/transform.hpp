// The transform adapter: a C++ class with the members below becomes a ramjet_transform_vtable.
#ifndef RAMJET_SDK_TRANSFORM_HPP
#define RAMJET_SDK_TRANSFORM_HPP

#include <ramjet/abi.h>
#include <ramjet/sdk/boundary.hpp>
#include <ramjet/sdk/example.hpp>

#include <cstdint>

namespace ramjet {

// Required: T(const Config&); void apply(Example& example, uint64_t seed) const;  (thread-safe, pure)

template <class T>
struct TransformAdapter {
  static ramjet_status apply(void* self, ramjet_example* example, uint64_t seed, ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      Example ex(example);
      static_cast<const T*>(self)->apply(ex, seed);
    });
  }
};

template <class T>
RAMJET_SDK_HIDDEN inline constexpr ramjet_transform_vtable transform_vtable = {sizeof(ramjet_transform_vtable), RAMJET_ABI_VERSION,
                                                             &detail::create<T>, &detail::destroy<T>,
                                                             &TransformAdapter<T>::apply};

template <class T>
  requires requires(const T& t, Example& ex, uint64_t seed) { t.apply(ex, seed); }
ramjet_component transform(const char* name) {
  return detail::component<T>(RAMJET_KIND_TRANSFORM, name, &transform_vtable<T>);
}

}  // namespace ramjet

#endif  // RAMJET_SDK_TRANSFORM_HPP
