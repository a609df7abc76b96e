// The data_source adapter: a C++ class with the members below becomes a ramjet_data_source_vtable.
#ifndef RAMJET_SDK_DATA_SOURCE_HPP
#define RAMJET_SDK_DATA_SOURCE_HPP

#include <ramjet/abi.h>
#include <ramjet/sdk/boundary.hpp>
#include <ramjet/sdk/example.hpp>
#include <ramjet/sdk/host.hpp>

#include <nlohmann/json.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ramjet {

// Required: T(const Config&); and either
//   random access: int64_t cardinality() const; void get(int64_t index, Example& out) const;  (thread-safe)
//   sequential:    bool next(Example& out);   (false at the end)
// Optional: nlohmann::json element_spec() const; void reset(uint64_t epoch); void shard(int64_t count, int64_t index);
//           std::string save_state() const; void restore_state(std::string_view state).

template <class T>
concept RandomAccessSource = requires(const T& t, int64_t i, Example& ex) {
  { t.cardinality() } -> std::convertible_to<int64_t>;
  t.get(i, ex);
};
template <class T>
concept SequentialSource = requires(T& t, Example& ex) {
  { t.next(ex) } -> std::same_as<bool>;
};

template <class T>
struct DataSourceAdapter {
  static ramjet_status cardinality(void* self, int64_t* out, ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      if constexpr (RandomAccessSource<T>) *out = detail::self_of<T>(self).cardinality();
      else *out = -1;
    });
  }
  static ramjet_status element_spec(void* self, ramjet_buffer* out, ramjet_error* error) noexcept {
    return detail::guard(error, [&] { assign(out, detail::self_of<T>(self).element_spec().dump()); });
  }
  static ramjet_status get(void* self, int64_t index, ramjet_example* out, ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      Example ex(out);
      static_cast<const T*>(self)->get(index, ex);  // the const, thread-safe overload
    });
  }
  static ramjet_status next(void* self, ramjet_example* out, int32_t* has, ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      Example ex(out);
      *has = detail::self_of<T>(self).next(ex) ? 1 : 0;
    });
  }
  static ramjet_status reset(void* self, uint64_t epoch, ramjet_error* error) noexcept {
    return detail::guard(error, [&] { detail::self_of<T>(self).reset(epoch); });
  }
  static ramjet_status shard(void* self, int64_t count, int64_t index, ramjet_error* error) noexcept {
    return detail::guard(error, [&] { detail::self_of<T>(self).shard(count, index); });
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
RAMJET_SDK_HIDDEN inline constexpr ramjet_data_source_vtable data_source_vtable = {
    sizeof(ramjet_data_source_vtable), RAMJET_ABI_VERSION, &detail::create<T>, &detail::destroy<T>,
    &DataSourceAdapter<T>::cardinality,
    RAMJET_SDK_OPTIONAL_SLOT((requires(const T& t) { t.element_spec(); }), &DataSourceAdapter<T>::element_spec),
    RAMJET_SDK_OPTIONAL_SLOT((RandomAccessSource<T>), &DataSourceAdapter<T>::get),
    RAMJET_SDK_OPTIONAL_SLOT((SequentialSource<T>), &DataSourceAdapter<T>::next),
    RAMJET_SDK_OPTIONAL_SLOT((requires(T& t) { t.reset(uint64_t{}); }), &DataSourceAdapter<T>::reset),
    RAMJET_SDK_OPTIONAL_SLOT((requires(T& t) { t.shard(int64_t{}, int64_t{}); }), &DataSourceAdapter<T>::shard),
    RAMJET_SDK_OPTIONAL_SLOT((requires(const T& t) { { t.save_state() } -> std::convertible_to<std::string>; }), &DataSourceAdapter<T>::save_state),
    RAMJET_SDK_OPTIONAL_SLOT((requires(T& t) { t.restore_state(std::string_view{}); }), &DataSourceAdapter<T>::restore_state)};

template <class T>
  requires RandomAccessSource<T> || SequentialSource<T>
ramjet_component data_source(const char* name) {
  return detail::component<T>(RAMJET_KIND_DATA_SOURCE, name, &data_source_vtable<T>);
}

}  // namespace ramjet

#endif  // RAMJET_SDK_DATA_SOURCE_HPP
