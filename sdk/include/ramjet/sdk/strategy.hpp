// The strategy adapter: a C++ class with the members below becomes a ramjet_strategy_vtable.
#ifndef RAMJET_SDK_STRATEGY_HPP
#define RAMJET_SDK_STRATEGY_HPP

#include <ramjet/abi.h>
#include <ramjet/sdk/boundary.hpp>
#include <ramjet/sdk/error.hpp>

#include <cstdint>

namespace ramjet {

// Required: T(const Config&); int rank() const; int world_size() const;
//           void broadcast(DLTensor&, const ramjet_collective_args&); void all_reduce(DLTensor&, const ramjet_collective_args&);
//           void barrier();
// Optional: uint64_t all_reduce_start(DLTensor&, const ramjet_collective_args&); void all_reduce_wait(uint64_t handle).

template <class T>
struct StrategyAdapter {
  static ramjet_status rank(void* self, int32_t* out, ramjet_error* error) noexcept {
    return detail::guard(error, [&] { *out = detail::self_of<T>(self).rank(); });
  }
  static ramjet_status world_size(void* self, int32_t* out, ramjet_error* error) noexcept {
    return detail::guard(error, [&] { *out = detail::self_of<T>(self).world_size(); });
  }
  static ramjet_status broadcast(void* self, DLTensor* t, const ramjet_collective_args* args,
                                 ramjet_error* error) noexcept {
    return detail::guard(error, [&] { detail::self_of<T>(self).broadcast(*t, checked(args)); });
  }
  static ramjet_status all_reduce(void* self, DLTensor* t, const ramjet_collective_args* args,
                                  ramjet_error* error) noexcept {
    return detail::guard(error, [&] { detail::self_of<T>(self).all_reduce(*t, checked(args)); });
  }
  static const ramjet_collective_args& checked(const ramjet_collective_args* args) {
    if (args == nullptr || args->struct_size < RAMJET_COLLECTIVE_ARGS_V1_SIZE)
      throw Error(RAMJET_ERR_VERSION_MISMATCH, "collective arguments missing or too small");
    return *args;
  }
  static ramjet_status barrier(void* self, ramjet_error* error) noexcept {
    return detail::guard(error, [&] { detail::self_of<T>(self).barrier(); });
  }
  static ramjet_status all_reduce_start(void* self, DLTensor* t, const ramjet_collective_args* args,
                                        uint64_t* handle, ramjet_error* error) noexcept {
    return detail::guard(error, [&] { *handle = detail::self_of<T>(self).all_reduce_start(*t, checked(args)); });
  }
  static ramjet_status all_reduce_wait(void* self, uint64_t handle, ramjet_error* error) noexcept {
    return detail::guard(error, [&] { detail::self_of<T>(self).all_reduce_wait(handle); });
  }
};

template <class T>
inline constexpr bool has_async_all_reduce = requires(T& t, DLTensor& d, const ramjet_collective_args& a) {
  t.all_reduce_start(d, a);
  t.all_reduce_wait(uint64_t{});
};

template <class T>
RAMJET_SDK_HIDDEN inline constexpr ramjet_strategy_vtable strategy_vtable = {
    sizeof(ramjet_strategy_vtable), RAMJET_ABI_VERSION, &detail::create<T>, &detail::destroy<T>,
    &StrategyAdapter<T>::rank, &StrategyAdapter<T>::world_size, &StrategyAdapter<T>::broadcast,
    &StrategyAdapter<T>::all_reduce, &StrategyAdapter<T>::barrier,
    RAMJET_SDK_OPTIONAL_SLOT((has_async_all_reduce<T>), &StrategyAdapter<T>::all_reduce_start),
    RAMJET_SDK_OPTIONAL_SLOT((has_async_all_reduce<T>), &StrategyAdapter<T>::all_reduce_wait)};

template <class T>
ramjet_component strategy(const char* name) {
  return detail::component<T>(RAMJET_KIND_STRATEGY, name, &strategy_vtable<T>);
}

}  // namespace ramjet

#endif  // RAMJET_SDK_STRATEGY_HPP
