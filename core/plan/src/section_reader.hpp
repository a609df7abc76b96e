// Shared by the plan's section readers: problems collected against one manifest, and typed reads of fields whose
// declarations (ramjet::Fields, the same mechanism plugins use) have already checked them.
#pragma once

#include "ramjet/plugin/components.hpp"
#include "ramjet/plugin/location.hpp"
#include "ramjet/plugin/plugin_registry.hpp"

#include <ramjet/sdk/fields.hpp>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace ramjet::core {

class SectionReader {
 public:
  SectionReader(const Origin& origin, PluginRegistry& registry, std::vector<Problem>& problems)
      : origin_(origin), registry_(registry), problems_(problems) {}

  const Origin& origin() const { return origin_; }
  PluginRegistry& registry() { return registry_; }
  size_t problem_count() const { return problems_.size(); }

  void add(std::string pointer, std::string message) { problems_.push_back({std::move(pointer), std::move(message)}); }
  // Checks `value` against declared fields; true when it had no problem.
  bool check(const ramjet::Fields& fields, const nlohmann::json& value, const std::string& pointer) {
    ramjet::Problems found;
    fields.check(value, pointer, found);
    for (auto& p : found) add(std::move(p.pointer), std::move(p.message));
    return found.empty();
  }

  // A component named by an object with "type" (or, where `bare_name_ok`, by a plain string): checks that some
  // plugin provides it and asks the component about its configuration. Nothing when it cannot be used.
  // `type_pointer` names where the type was written when that is not "<pointer>/type".
  std::optional<ComponentSpec> component(const nlohmann::json& value, const std::string& pointer,
                                         ramjet_component_kind kind, bool bare_name_ok, uint64_t seed,
                                         std::string type_pointer = "");

 private:
  const Origin& origin_;
  PluginRegistry& registry_;
  std::vector<Problem>& problems_;
};

// A declared field's value, or its fallback when absent.
template <class T>
T field_or(const nlohmann::json& object, const ramjet::Fields& fields, const std::string& name) {
  if (auto it = object.find(name); it != object.end()) return it->get<T>();
  return fields.find(name)->fallback_value()->get<T>();
}

}  // namespace ramjet::core
