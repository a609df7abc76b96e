#include "ramjet/core/pipeline_manifest.hpp"

#include "ramjet/core/export_config.hpp"
#include "ramjet/core/failure.hpp"
#include "ramjet/core/graph.hpp"
#include "ramjet/core/train_config.hpp"
#include "ramjet/core/plugin_registry.hpp"

#include <fstream>
#include <set>
#include <sstream>

namespace ramjet::core {
namespace {

using nlohmann::json;

std::string escape_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

class Validator {
 public:
  Validator(const PipelineManifest& manifest, const PluginRegistry& registry, std::vector<Problem>& problems)
      : manifest_(manifest), registry_(registry), problems_(problems) {}

  void root(const json& doc) {
    if (!doc.is_object()) return add("", std::string("the manifest must be a JSON object, got ") + doc.type_name());
    for (const auto& [key, value] : doc.items()) {
      const std::string p = "/" + escape_token(key);
      if (key == "data") data(value, p);
      else if (key == "seed") non_negative_integer(value, p);
      else if (key == "model") model();
      else if (key == "train") train();
      else if (key == "export") exporting();
      else add(p, "unknown field (expected data, model, train, export, seed)");
    }
    if (!doc.contains("data")) add("/data", "required section is missing");
    if (doc.contains("train") && !doc.contains("model")) add("/model", "training needs a model");
    if (doc.contains("model") && !doc.contains("train")) add("/train", "a model needs a train section to run");
    if (doc.contains("export") && !doc.contains("model")) add("/model", "exporting needs a model");
    if (doc.contains("train") && doc.contains("data") && doc["data"].is_object() && !doc["data"].contains("train"))
      add("/data/train", "training needs a train input pipeline");
  }

 private:
  void add(std::string pointer, std::string message) { problems_.push_back({std::move(pointer), std::move(message)}); }

  // The model is checked by building its graph: shapes are inferred layer by layer, so the first problem stops it.
  void model() {
    try {
      build_graph(manifest_, "/model");
    } catch (const ManifestError& e) {
      add(e.pointer, e.message);
    }
  }

  void train() {
    try {
      read_train_config(manifest_);
    } catch (const ManifestError& e) {
      add(e.pointer, e.message);
    }
    if (!manifest_.doc["train"].is_object()) return;
    const auto& b = manifest_.doc["train"].value("backend", nlohmann::json("cpu"));
    const std::string backend = b.is_object() ? b.value("type", std::string("cpu")) : b.is_string() ? b.get<std::string>() : "cpu";
    provided(RAMJET_KIND_BACKEND, "backend", backend, "/train/backend");
    // float32 and single are built in; any other precision or strategy is a component some plugin must provide.
    const auto& t = manifest_.doc["train"];
    if (t.contains("precision") && t["precision"].is_string() && t["precision"] != "float32")
      provided(RAMJET_KIND_PRECISION_POLICY, "precision_policy", t["precision"].get<std::string>(), "/train/precision");
    const auto& st = t.value("strategy", nlohmann::json("single"));
    const std::string strategy = st.is_object() ? st.value("type", std::string("single")) : st.is_string() ? st.get<std::string>() : "single";
    if (strategy != "single") provided(RAMJET_KIND_STRATEGY, "strategy", strategy, "/train/strategy");
  }

  void provided(ramjet_component_kind kind, const std::string& kind_name, const std::string& name, const std::string& pointer) {
    if (registry_.provider(kind, name) != nullptr) return;
    std::string list;
    for (const auto& n : registry_.available(kind)) list += (list.empty() ? "" : ", ") + n;
    add(pointer, "no plugin provides " + kind_name + " '" + name + "' (available: " + (list.empty() ? "none" : list) + ")");
  }

  void exporting() {
    try {
      const ExportConfig c = read_export_config(manifest_);
      if (registry_.provider(RAMJET_KIND_QUANTIZER, c.quantizer) == nullptr)
        add("/export/quantizer", "no plugin provides quantizer '" + c.quantizer + "'");
      if (registry_.provider(RAMJET_KIND_EXPORTER, c.format) == nullptr)
        add("/export/format", "no plugin provides exporter '" + c.format + "'");
    } catch (const ManifestError& e) {
      add(e.pointer, e.message);
    }
  }

  bool object(const json& v, const std::string& p) {
    if (v.is_object()) return true;
    add(p, std::string("must be an object, got ") + v.type_name());
    return false;
  }
  void positive_integer(const json& v, const std::string& p) {
    if (!v.is_number_integer() || v.get<int64_t>() < 1) add(p, "must be a positive integer, got " + v.dump());
  }
  void non_negative_integer(const json& v, const std::string& p) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0) add(p, "must be a non-negative integer, got " + v.dump());
  }

  void data(const json& v, const std::string& p) {
    if (!object(v, p)) return;
    if (v.empty()) add(p, "must name at least one pipeline (train, eval)");
    for (const auto& [key, value] : v.items()) {
      const std::string sub = p + "/" + escape_token(key);
      if (key == "train" || key == "eval") pipeline(value, sub);
      else add(sub, "unknown pipeline (expected train, eval)");
    }
  }

  void pipeline(const json& v, const std::string& p) {
    if (!object(v, p)) return;
    for (const auto& [key, value] : v.items()) {
      const std::string sub = p + "/" + escape_token(key);
      if (key == "source") component(value, sub, RAMJET_KIND_DATA_SOURCE);
      else if (key == "map" || key == "augment") {
        if (!value.is_array()) {
          add(sub, std::string("must be an array of transforms, got ") + value.type_name());
          continue;
        }
        for (size_t i = 0; i < value.size(); ++i)
          component(value[i], sub + "/" + std::to_string(i), RAMJET_KIND_TRANSFORM);
      } else if (key == "batch" || key == "epochs") positive_integer(value, sub);
      else if (key == "take" || key == "shuffle") non_negative_integer(value, sub);
      else if (key == "drop_remainder" || key == "deterministic") boolean(value, sub);
      else if (key == "parallelism" || key == "prefetch") {
        if (!(value == "auto" || (value.is_number_integer() && value.get<int64_t>() >= (key == "prefetch" ? 0 : 1))))
          add(sub, std::string("must be \"auto\" or an integer ") + (key == "prefetch" ? ">= 0" : ">= 1") +
                       ", got " + value.dump());
      } else if (key == "cache") {
        if (!value.is_string() || value.get<std::string>().empty())
          add(sub, "must be \"memory\" or a file path, got " + value.dump());
      } else if (key == "on_error") {
        if (!(value == "fail" || value == "skip")) add(sub, "must be \"fail\" or \"skip\", got " + value.dump());
      } else if (key == "shard") shard(value, sub);
      else if (key == "interleave") interleave(value, sub);
      else if (key == "budget") budget(value, sub);
      else
        add(sub, "unknown field (expected source, map, augment, batch, drop_remainder, epochs, take, shuffle, cache, "
                 "parallelism, prefetch, deterministic, shard, interleave, on_error, budget)");
    }
    if (!v.contains("source")) add(p + "/source", "required field is missing");
  }

  void boolean(const json& v, const std::string& p) {
    if (!v.is_boolean()) add(p, std::string("must be true or false, got ") + v.dump());
  }

  void shard(const json& v, const std::string& p) {
    if (!object(v, p)) return;
    for (const auto& [key, value] : v.items())
      if (key != "count" && key != "index") add(p + "/" + escape_token(key), "unknown field (expected count, index)");
    auto count = v.find("count"), index = v.find("index");
    if (count == v.end()) add(p + "/count", "required field is missing");
    else positive_integer(*count, p + "/count");
    if (index == v.end()) add(p + "/index", "required field is missing");
    else non_negative_integer(*index, p + "/index");
    if (count != v.end() && index != v.end() && count->is_number_integer() && index->is_number_integer() &&
        index->get<int64_t>() >= count->get<int64_t>())
      add(p + "/index", "must be below count (" + count->dump() + ")");
  }

  void interleave(const json& v, const std::string& p) {
    if (!object(v, p)) return;
    for (const auto& [key, value] : v.items()) {
      const std::string sub = p + "/" + escape_token(key);
      if (key == "cycle_length" || key == "block_length") positive_integer(value, sub);
      else if (key == "parallel") boolean(value, sub);
      else add(sub, "unknown field (expected cycle_length, block_length, parallel)");
    }
  }

  void budget(const json& v, const std::string& p) {
    if (!object(v, p)) return;
    for (const auto& [key, value] : v.items()) {
      const std::string sub = p + "/" + escape_token(key);
      if (key == "cpu" || key == "memory_mb") positive_integer(value, sub);
      else add(sub, "unknown field (expected cpu, memory_mb)");
    }
  }

  void component(const json& v, const std::string& p, ramjet_component_kind kind) {
    if (!object(v, p)) return;
    auto type = v.find("type");
    if (type == v.end()) return add(p + "/type", "required field is missing");
    if (!type->is_string()) return add(p + "/type", std::string("must be a string, got ") + type->type_name());
    const std::string name = type->get<std::string>();
    if (registry_.provider(kind, name) == nullptr) {
      std::string list;
      for (const auto& n : registry_.available(kind)) list += (list.empty() ? "" : ", ") + n;
      add(p + "/type", "no plugin provides " + std::string(kind_name(kind)) + " '" + name +
                           "' (available: " + (list.empty() ? "none" : list) + ")");
    }
  }

  const PipelineManifest& manifest_;
  const PluginRegistry& registry_;
  std::vector<Problem>& problems_;
};

}  // namespace

PipelineManifest load_pipeline_manifest(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InvalidInput(path.string() + ": cannot open the manifest file");
  PipelineManifest m;
  m.path = path;
  try {
    m.doc = json::parse(in);
  } catch (const json::parse_error& e) {
    // nlohmann's message carries line and column; the byte offset is the place a tool can jump to.
    throw InvalidInput(path.string() + ": not valid JSON at byte " + std::to_string(e.byte) + ": " + e.what());
  }
  return m;
}

void apply_override(PipelineManifest& manifest, const std::string& assignment) {
  auto eq = assignment.find('=');
  if (assignment.empty() || assignment[0] != '/' || eq == std::string::npos)
    throw InvalidInput("--set '" + assignment + "': expected POINTER=VALUE, e.g. --set /data/train/batch=64");
  const std::string pointer = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  json value;
  try {
    value = json::parse(text);
  } catch (const json::parse_error&) {
    value = text;  // a bare word such as mixed_bfloat16
  }
  try {
    manifest.doc[json::json_pointer(pointer)] = value;
  } catch (const json::exception& e) {
    throw InvalidInput("--set '" + assignment + "': cannot set " + manifest.where(pointer) + ": " + e.what());
  }
}

std::vector<Problem> validate_pipeline_manifest(const PipelineManifest& manifest, const PluginRegistry& registry) {
  std::vector<Problem> problems;
  Validator(manifest, registry, problems).root(manifest.doc);
  return problems;
}

void require_valid(const PipelineManifest& manifest, const PluginRegistry& registry) {
  auto problems = validate_pipeline_manifest(manifest, registry);
  if (problems.empty()) return;
  std::string text = std::to_string(problems.size()) + (problems.size() == 1 ? " problem" : " problems") + " in " +
                     manifest.path.string() + ":";
  for (const auto& p : problems) text += "\n  " + manifest.where(p.pointer) + ": " + p.message;
  throw InvalidInput(text);
}

}  // namespace ramjet::core
