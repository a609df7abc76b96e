// ramjet::Example: a non-owning view of a host ramjet_example (named tensors in insertion order).
#ifndef RAMJET_SDK_EXAMPLE_HPP
#define RAMJET_SDK_EXAMPLE_HPP

#include <ramjet/abi.h>
#include <ramjet/sdk/error.hpp>
#include <ramjet/sdk/host.hpp>
#include <ramjet/sdk/tensor.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace ramjet {

// A non-owning view of a host example: named tensors in insertion order.
class Example {
 public:
  explicit Example(ramjet_example* raw) : raw_(raw) {}
  size_t size() const { return host().example_size(raw_); }
  std::string_view name(size_t i) const {
    const char* n = host().example_name(raw_, i);
    return n ? std::string_view(n) : std::string_view();
  }
  DLTensor* at(size_t i) { return host().example_at(raw_, i); }
  // Names are passed to the host as C strings; std::string keys avoid a copy on this per-element path.
  DLTensor* find(const char* name) { return host().example_find(raw_, name); }
  DLTensor* find(const std::string& name) { return find(name.c_str()); }
  DLTensor& get(const char* name) {
    DLTensor* t = find(name);
    if (t == nullptr) throw Error(RAMJET_ERR_INVALID_ARGUMENT, std::string("the example has no tensor named '") + name + "'");
    return *t;
  }
  DLTensor& get(const std::string& name) { return get(name.c_str()); }
  void set(const char* name, Tensor&& tensor) {
    ramjet_status s = host().example_set(raw_, name, tensor.release());
    if (s != RAMJET_OK) throw Error(s, std::string("cannot set tensor '") + name + "'");
  }
  void set(const std::string& name, Tensor&& tensor) { set(name.c_str(), std::move(tensor)); }
  void remove(const char* name) { host().example_remove(raw_, name); }
  void remove(const std::string& name) { remove(name.c_str()); }
  ramjet_example* raw() { return raw_; }

 private:
  ramjet_example* raw_;
};

}  // namespace ramjet

#endif  // RAMJET_SDK_EXAMPLE_HPP
