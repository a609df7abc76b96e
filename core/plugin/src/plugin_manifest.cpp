#include "ramjet/plugin/plugin_manifest.hpp"

#include "ramjet/plugin/failure.hpp"
#include "ramjet/plugin/json_text.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <fstream>
#include <sstream>

namespace ramjet::core {
namespace {

constexpr std::array<std::string_view, kKindCount> kKindNames = {
    "data_source", "transform", "precision_policy", "strategy", "quantizer", "exporter", "backend"};

using nlohmann::json;

class Checker {
 public:
  explicit Checker(std::vector<ManifestProblem>& problems) : problems_(problems) {}

  const json* field(const json& doc, const char* key, json::value_t type, const char* type_name) {
    auto it = doc.find(key);
    std::string pointer = std::string("/") + key;
    if (it == doc.end()) {
      problems_.push_back({pointer, "required field is missing"});
      return nullptr;
    }
    bool ok = it->type() == type || (type == json::value_t::number_unsigned && it->is_number_integer() &&
                                     it->get<int64_t>() >= 0);
    if (!ok) {
      problems_.push_back({pointer, std::string("must be ") + type_name + ", got " + it->type_name()});
      return nullptr;
    }
    return &*it;
  }
  void add(std::string pointer, std::string message) { problems_.push_back({std::move(pointer), std::move(message)}); }

 private:
  std::vector<ManifestProblem>& problems_;
};

}  // namespace

std::string_view kind_name(ramjet_component_kind kind) {
  auto i = static_cast<size_t>(kind);
  return i < kKindNames.size() ? kKindNames[i] : std::string_view("unknown");
}

std::optional<ramjet_component_kind> kind_from_name(std::string_view name) {
  for (size_t i = 0; i < kKindNames.size(); ++i)
    if (kKindNames[i] == name) return static_cast<ramjet_component_kind>(i);
  return std::nullopt;
}

std::string ManifestParse::describe() const {
  std::string s;
  for (const auto& p : problems) {
    if (!s.empty()) s += "; ";
    s += p.pointer.empty() ? p.message : p.pointer + ": " + p.message;
  }
  return s;
}

ManifestParse read_plugin_manifest(const std::filesystem::path& file) {
  ManifestParse result;
  Checker check(result.problems);
  json doc;
  try {
    doc = read_json_file(file);
  } catch (const InvalidInput& e) {
    // The message starts with the file's name, which the problem list already shows.
    std::string why = e.what();
    const std::string prefix = file.string() + ": ";
    if (why.rfind(prefix, 0) == 0) why = why.substr(prefix.size());
    check.add("", why);
    return result;
  }
  if (!doc.is_object()) {
    check.add("", std::string("must be a JSON object, got ") + doc.type_name());
    return result;
  }

  PluginManifest m;
  m.path = file;
  if (auto* v = check.field(doc, "file_format_version", json::value_t::string, "a string")) {
    m.file_format_version = v->get<std::string>();
    const std::string& s = m.file_format_version;
    auto dot = s.find('.');
    if (s.substr(0, dot) != std::to_string(kPluginManifestMajor))
      check.add("/file_format_version", "unsupported version '" + s + "' (this host reads " +
                                            std::to_string(kPluginManifestMajor) + ".x)");
  }
  if (auto* v = check.field(doc, "name", json::value_t::string, "a string")) {
    m.name = v->get<std::string>();
    if (m.name.empty()) check.add("/name", "must not be empty");
  }
  if (auto* v = check.field(doc, "version", json::value_t::string, "a string")) m.version = v->get<std::string>();
  if (auto* abi = check.field(doc, "abi", json::value_t::object, "an object")) {
    Checker sub(result.problems);
    bool ok = true;
    for (const char* key : {"min", "max"}) {
      auto it = abi->find(key);
      std::string pointer = std::string("/abi/") + key;
      if (it == abi->end()) {
        check.add(pointer, "required field is missing");
        ok = false;
      } else if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > 0xFFFFFFFFll) {
        check.add(pointer, "must be a positive integer, got " + it->dump());
        ok = false;
      }
    }
    if (ok) {
      m.abi_min = abi->at("min").get<uint32_t>();
      m.abi_max = abi->at("max").get<uint32_t>();
      if (m.abi_min > m.abi_max) check.add("/abi", "min is greater than max");
    }
  }
  if (auto* v = check.field(doc, "library", json::value_t::string, "a string")) {
    std::filesystem::path lib = v->get<std::string>();
    if (lib.empty()) check.add("/library", "must not be empty");
    m.library = lib.is_absolute() ? lib : file.parent_path() / lib;
  }
  if (auto* provides = check.field(doc, "provides", json::value_t::object, "an object")) {
    for (const auto& [kind_text, names] : provides->items()) {
      std::string pointer = "/provides/" + kind_text;
      auto kind = kind_from_name(kind_text);
      if (!kind) {
        check.add(pointer, "unknown component kind '" + kind_text + "'");
        continue;
      }
      if (!names.is_array()) {
        check.add(pointer, std::string("must be an array of names, got ") + names.type_name());
        continue;
      }
      for (size_t i = 0; i < names.size(); ++i) {
        if (!names[i].is_string() || names[i].get<std::string>().empty())
          check.add(pointer + "/" + std::to_string(i), "must be a non-empty string");
        else
          m.provides[*kind].push_back(names[i].get<std::string>());
      }
    }
  }
  if (result.problems.empty()) result.manifest = std::move(m);
  return result;
}

}  // namespace ramjet::core
