// Host-side owners of component instances. Each holds its library open, creates the instance from its JSON
// configuration, destroys it exactly once, and turns every failing status into a C++ exception for the core.
#pragma once

#include "ramjet/plugin/example.hpp"
#include "ramjet/plugin/host_api.hpp"
#include "ramjet/plugin/location.hpp"
#include "ramjet/plugin/plugin_registry.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ramjet::core {

// A component named in a manifest: its configuration object ("type" included) and the JSON pointer to it.
struct ComponentSpec {
  nlohmann::json config;  // the manifest object, "type" included
  std::string pointer;    // its JSON pointer, for messages
  std::string type() const { return config.at("type").get<std::string>(); }
  // The configuration the component itself receives: the object without "type".
  nlohmann::json own_config() const {
    nlohmann::json c = config;
    c.erase("type");
    return c;
  }
};

struct CreateArgs {
  nlohmann::json config = nlohmann::json::object();
  std::filesystem::path base_dir;  // relative paths in the config are resolved against it
  std::string where;               // "file.json#/data/train/source" for messages
  uint64_t seed = 0;
  uint32_t num_threads = 0;
};

// Throws InvalidInput for statuses that describe bad input (arguments, data, i/o, unsupported requests) and
// RuntimeFailure for the rest, with `what` and the plugin's message.
void throw_on_error(ramjet_status status, const ramjet_error& error, const std::string& what);

// What the component says of its configuration without being created (check_config, ABI 2): problems with
// pointers made absolute under `pointer`. Empty when it is fine or the component has no check_config slot.
std::vector<Problem> check_component_config(const ComponentRef& ref, const CreateArgs& args, const std::string& pointer);

// What a backend says of its compile options (check_options, ABI 2), pointers relative to the options object.
std::vector<Problem> check_backend_options(const ComponentRef& ref, const nlohmann::json& options);

class ComponentInstance {
 public:
  ComponentInstance(ComponentRef ref, const CreateArgs& args);
  ComponentInstance(ComponentInstance&& other) noexcept;
  ComponentInstance& operator=(ComponentInstance&&) = delete;
  ComponentInstance(const ComponentInstance&) = delete;
  ~ComponentInstance();

  const ComponentRef& ref() const { return ref_; }
  const std::string& where() const { return where_; }
  void* self() const { return self_; }
  // The library as an untyped keep-alive handle for examples whose tensors it may have produced.
  std::shared_ptr<const void> library_handle() const { return ref_.library; }
  // After a call that filled `example`: if any tensor carries a deleter that is not the host's (so its code may
  // live in this plugin), the example holds the library open. Host-made tensors need nothing, which keeps the
  // shared reference count off the per-element path.
  void retain_if_foreign(Example& example) const;

 protected:
  template <class VTable>
  const VTable& vt() const { return ref_.vtable<VTable>(); }
  // Is `slot` inside the struct the plugin actually built (struct_size) and non-null?
  template <class VTable, class Slot>
  bool has_slot(Slot VTable::*member) const {
    const VTable& v = vt<VTable>();
    const size_t end = reinterpret_cast<const char*>(&(v.*member)) - reinterpret_cast<const char*>(&v) + sizeof(Slot);
    return v.struct_size >= end && v.*member != nullptr;
  }
  std::string what(const char* operation) const;

  ComponentRef ref_;
  std::string where_;
  void* self_ = nullptr;
};

class DataSource : public ComponentInstance {
 public:
  DataSource(ComponentRef ref, const CreateArgs& args);
  int64_t cardinality() const;  // -1 for sequential sources
  bool random_access() const;
  std::optional<nlohmann::json> element_spec() const;
  void get(int64_t index, Example& out) const;  // thread-safe when the source is random-access
  bool next(Example& out);                      // false at the end of a sequential source
  void reset(uint64_t epoch);

 private:
  bool random_access_ = false;
};

class Transform : public ComponentInstance {
 public:
  using ComponentInstance::ComponentInstance;
  void apply(Example& example, uint64_t seed) const;  // thread-safe
};

}  // namespace ramjet::core
