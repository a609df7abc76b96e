// The backend adapter: a C++ class (and its nested Program) with the members below becomes a ramjet_backend_vtable.
#ifndef RAMJET_SDK_BACKEND_HPP
#define RAMJET_SDK_BACKEND_HPP

#include <ramjet/abi.h>
#include <ramjet/sdk/boundary.hpp>
#include <ramjet/sdk/error.hpp>
#include <ramjet/sdk/example.hpp>
#include <ramjet/sdk/fields.hpp>
#include <ramjet/sdk/host.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace ramjet {

// Required: T(const Config&); a nested type T::Program and
//   std::unique_ptr<typename T::Program> compile(const nlohmann::json& graph, const nlohmann::json& options);
// and on T::Program:
//   void forward(const ramjet_forward_args& args, Example& inputs, Example& outputs);
//   void backward(const ramjet_backward_args& args);
//   void optimizer_update(const ramjet_update_args& args);
//   void get_state(std::string_view which, Example& out); void set_state(std::string_view which, Example& values);
// Optional on T::Program: void set_taps(const std::vector<std::string>& names, ramjet_tap_fn fn, void* user)
// (call the tap with a ramjet_error and throw a ramjet::Error carrying its status if it fails).
// Optional on T: static void check_options(const nlohmann::json& options, ramjet::Problems& problems) — judges
// compile options for `ramjet validate` (pointers relative to the options object).

template <class T>
struct BackendAdapter {
  using Program = typename T::Program;
  static Program& program_of(ramjet_program* p) { return *reinterpret_cast<Program*>(p); }

  static ramjet_status compile(void* self, const char* graph, const char* options, ramjet_program** out,
                               ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      auto program = detail::self_of<T>(self).compile(nlohmann::json::parse(graph),
                                                      nlohmann::json::parse(options ? options : "{}"));
      *out = reinterpret_cast<ramjet_program*>(program.release());
    });
  }
  static void program_destroy(void*, ramjet_program* program) noexcept { delete reinterpret_cast<Program*>(program); }
  static ramjet_status forward(void*, ramjet_program* p, const ramjet_forward_args* args, ramjet_example* in,
                               ramjet_example* out, ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      if (args == nullptr || args->struct_size < RAMJET_FORWARD_ARGS_V1_SIZE)
        throw Error(RAMJET_ERR_VERSION_MISMATCH, "forward arguments missing or too small");
      Example i(in), o(out);
      program_of(p).forward(*args, i, o);
    });
  }
  static ramjet_status backward(void*, ramjet_program* p, const ramjet_backward_args* args,
                                ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      if (args == nullptr || args->struct_size < RAMJET_BACKWARD_ARGS_V1_SIZE)
        throw Error(RAMJET_ERR_VERSION_MISMATCH, "backward arguments missing or too small");
      program_of(p).backward(*args);
    });
  }
  static ramjet_status optimizer_update(void*, ramjet_program* p, const ramjet_update_args* args,
                                        ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      if (args == nullptr || args->struct_size < RAMJET_UPDATE_ARGS_V1_SIZE)
        throw Error(RAMJET_ERR_VERSION_MISMATCH, "update arguments missing or too small");
      program_of(p).optimizer_update(*args);
    });
  }
  static ramjet_status get_state(void*, ramjet_program* p, const char* which, ramjet_example* out,
                                 ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      Example o(out);
      program_of(p).get_state(which, o);
    });
  }
  static ramjet_status set_state(void*, ramjet_program* p, const char* which, ramjet_example* values,
                                 ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      Example v(values);
      program_of(p).set_state(which, v);
    });
  }
  static ramjet_status set_taps(void*, ramjet_program* p, const char* names_json, ramjet_tap_fn fn, void* user,
                                ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      program_of(p).set_taps(nlohmann::json::parse(names_json).get<std::vector<std::string>>(), fn, user);
    });
  }
  static ramjet_status check_options(const char* options_json, ramjet_buffer* out, ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      Problems problems;
      T::check_options(nlohmann::json::parse(options_json ? options_json : "{}"), problems);
      assign(out, problems_to_json(problems).dump());
    });
  }
};

template <class T>
RAMJET_SDK_HIDDEN inline constexpr ramjet_backend_vtable backend_vtable = {
    sizeof(ramjet_backend_vtable), RAMJET_ABI_VERSION, &detail::create<T>, &detail::destroy<T>,
    &BackendAdapter<T>::compile, &BackendAdapter<T>::program_destroy, &BackendAdapter<T>::forward,
    &BackendAdapter<T>::backward, &BackendAdapter<T>::optimizer_update, &BackendAdapter<T>::get_state,
    &BackendAdapter<T>::set_state,
    RAMJET_SDK_OPTIONAL_SLOT((requires(typename T::Program& p, const std::vector<std::string>& n) { p.set_taps(n, ramjet_tap_fn{}, nullptr); }), &BackendAdapter<T>::set_taps),
    RAMJET_SDK_OPTIONAL_SLOT((requires(const nlohmann::json& options, Problems& problems) { T::check_options(options, problems); }), &BackendAdapter<T>::check_options)};

template <class T>
ramjet_component backend(const char* name) {
  return detail::component<T>(RAMJET_KIND_BACKEND, name, &backend_vtable<T>);
}

}  // namespace ramjet

#endif  // RAMJET_SDK_BACKEND_HPP
