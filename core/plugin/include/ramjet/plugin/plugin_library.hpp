// A loaded plugin library: opened with Boost.DLL (RTLD_NOW | RTLD_LOCAL), negotiated through its one entry point,
// its descriptor and vtables validated. Shared by every component made from it; unloads with the last owner.
#pragma once

#include "ramjet/plugin/plugin_manifest.hpp"

#include <boost/dll/shared_library.hpp>

#include <memory>
#include <string>
#include <vector>

namespace ramjet::core {

class PluginLibrary {
 public:
  // Throws RuntimeFailure naming the manifest, the library and what went wrong.
  static std::shared_ptr<PluginLibrary> load(const PluginManifest& manifest);

  const PluginManifest& manifest() const { return manifest_; }
  const ramjet_plugin& descriptor() const { return *descriptor_; }
  uint32_t abi_version() const { return descriptor_->abi_version; }
  // The component of this kind and name, or null when the library does not provide it.
  const ramjet_component* find(ramjet_component_kind kind, std::string_view name) const;

  PluginLibrary(const PluginLibrary&) = delete;
  PluginLibrary& operator=(const PluginLibrary&) = delete;
  ~PluginLibrary();

 private:
  PluginLibrary(PluginManifest manifest, boost::dll::shared_library library, const ramjet_plugin* descriptor);

  PluginManifest manifest_;
  boost::dll::shared_library library_;
  const ramjet_plugin* descriptor_;
};

// Text from a manifest or a library (a name, a path) as shown in a message: at most `limit` characters, the middle
// cut out, so a 100000-character name or path never comes back whole.
std::string elide(std::string_view text, size_t limit = 300);

// The smallest vtable struct_size this host accepts for a kind (its ABI v1 size), and whether the required slots
// of that kind are all set. Empty string when valid, otherwise the reason.
std::string validate_vtable(ramjet_component_kind kind, const void* vtable);

}  // namespace ramjet::core
