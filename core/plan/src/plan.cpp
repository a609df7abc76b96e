#include "ramjet/plan/plan.hpp"

#include "data_model_match.hpp"
#include "data_section.hpp"
#include "export_section.hpp"
#include "model_warnings.hpp"
#include "section_reader.hpp"
#include "train_section.hpp"

#include "ramjet/plugin/failure.hpp"
#include "ramjet/plugin/model_components.hpp"

#include <ramjet/sdk/fields.hpp>

namespace ramjet::core {
namespace {

using nlohmann::json;

std::string names(const std::vector<std::string>& list) {
  std::string out;
  for (const auto& n : list) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

// Asks the backend about the compile options training will use: the optimizer and the precision policy's
// per-layer dtypes. Its problems point into the manifest where the user wrote the setting.
void check_training_options(const Plan& plan, SectionReader& reader) {
  const TrainConfig& t = *plan.train;
  json options = {{"optimizer", t.optimizer}};
  if (plan.train_data) options["batch"] = plan.train_data->batch;
  if (t.precision && plan.graph) {
    PrecisionPolicy policy(reader.registry().component(RAMJET_KIND_PRECISION_POLICY, t.precision->type()),
                           plan.create_args(*t.precision));
    options["layer_dtypes"] = policy.layer_dtypes(plan.graph->ir);
  }
  const ComponentRef backend = reader.registry().component(RAMJET_KIND_BACKEND, t.backend.type());
  for (auto& p : check_backend_options(backend, options)) {
    if (p.pointer.rfind("/optimizer", 0) == 0) reader.add("/train" + p.pointer, p.message);
    else if (p.pointer.rfind("/layer_dtypes", 0) == 0)
      reader.add(t.precision ? t.precision->pointer : "/train/precision",
                 "the " + t.backend.type() + " backend cannot run what precision '" + t.precision_name() +
                     "' asks of layer '" + p.pointer.substr(std::string("/layer_dtypes/").size()) + "': " + p.message);
    else reader.add("/train", p.message);
  }
}

}  // namespace

std::optional<ComponentSpec> SectionReader::component(const json& value, const std::string& pointer,
                                                      ramjet_component_kind kind, bool bare_name_ok, uint64_t seed,
                                                      std::string type_pointer) {
  json config;
  if (bare_name_ok && value.is_string()) {
    config = {{"type", value}};
    if (type_pointer.empty()) type_pointer = pointer;
  } else if (value.is_object()) {
    config = value;
    if (type_pointer.empty()) type_pointer = pointer + "/type";
  } else {
    add(pointer, std::string("must be ") + (bare_name_ok ? "a name or " : "") + "an object with a \"type\", got " +
                     ramjet::quote_value(value));
    return std::nullopt;
  }
  auto type = config.find("type");
  if (type == config.end()) {
    add(type_pointer, "required field is missing");
    return std::nullopt;
  }
  if (!type->is_string()) {
    add(type_pointer, "must be a string, got " + ramjet::quote_value(*type));
    return std::nullopt;
  }
  const std::string name = type->get<std::string>();
  if (registry_.provider(kind, name) == nullptr) {
    const auto available = registry_.available(kind);
    std::string message = "no plugin provides " + std::string(kind_name(kind)) + " '" + name + "'";
    if (auto guess = ramjet::closest_word(name, available)) message += " (did you mean '" + *guess + "'?)";
    add(type_pointer, message + "; available: " + names(available) + registry_.skipped_declarations(kind, name));
    return std::nullopt;
  }
  ComponentSpec spec{config, pointer};
  CreateArgs args;
  args.config = spec.own_config();
  args.base_dir = origin_.base_dir();
  args.where = origin_.where(pointer);
  args.seed = seed;
  const size_t before = problems_.size();
  // A plugin that cannot load is a runtime failure (exit 1), not a problem of the manifest: it propagates.
  for (auto& p : check_component_config(registry_.component(kind, name), args, pointer)) add(p.pointer, p.message);
  if (problems_.size() != before) return std::nullopt;
  return spec;
}

CreateArgs Plan::create_args(const ComponentSpec& spec) const {
  CreateArgs args;
  args.config = spec.own_config();
  args.base_dir = origin.base_dir();
  args.where = origin.where(spec.pointer);
  args.seed = seed;
  return args;
}

namespace {

// A callback watching val_<metric> needs the model to compute that metric.
void check_monitors(const TrainConfig& train, const json& ir, SectionReader& reader) {
  auto check = [&](const MonitorConfig& m, const std::string& pointer) {
    if (m.metric.rfind("val_", 0) != 0 || m.metric == "val_loss") return;
    std::vector<std::string> known = {"val_loss"};
    for (const auto& spec : ir.value("metrics", json::array())) {
      known.push_back("val_" + spec.at("name").get<std::string>());
      if (known.back() == m.metric) return;
    }
    std::string message = "the model has no metric '" + m.metric.substr(4) + "'";
    if (auto guess = ramjet::closest_word(m.metric, known)) message += " (did you mean '" + *guess + "'?)";
    std::string names;
    for (const auto& k : known) names += (names.empty() ? "" : ", ") + k;
    reader.add(pointer, message + "; its validation numbers are " + names + " (declare more in /model/metrics)");
  };
  if (train.early_stopping) check(train.early_stopping->monitor, "/train/early_stopping/monitor");
  if (train.reduce_lr_on_plateau) check(train.reduce_lr_on_plateau->monitor, "/train/reduce_lr_on_plateau/monitor");
}

}  // namespace

const PipelineSpec& Plan::require_eval(const std::string& why) const {
  if (!eval_data) throw InvalidInput(origin.where("/data/eval") + ": " + why + " needs an eval input pipeline");
  return *eval_data;
}

PlanReading read_plan(const PipelineManifest& manifest, PluginRegistry& registry) {
  PlanReading out;
  Plan& plan = out.plan;
  plan.origin = manifest.origin();
  SectionReader reader(plan.origin, registry, out.problems);
  const json& doc = manifest.doc;
  if (!doc.is_object()) {
    reader.add("", std::string("the manifest must be a JSON object, got ") + doc.type_name());
    return out;
  }
  static const ramjet::Fields top{ramjet::Field::any("seed"), ramjet::Field::any("data"), ramjet::Field::any("model"),
                                  ramjet::Field::any("train"), ramjet::Field::any("export")};
  for (const auto& [key, value] : doc.items()) {
    if (!top.find(key)) {
      std::string message = "unknown field '" + key + "'";
      if (auto guess = ramjet::closest_word(key, top.names())) message += " (did you mean '" + *guess + "'?)";
      reader.add("/" + ramjet::pointer_token(key), message + "; the sections are: data, model, train, export, seed");
    }
  }
  if (doc.contains("seed")) {
    const json& seed = doc["seed"];
    if (seed.is_number_unsigned() || (seed.is_number_integer() && seed.get<int64_t>() >= 0))
      plan.seed = seed.get<uint64_t>();
    else reader.add("/seed", "must be a non-negative integer, got " + ramjet::quote_value(doc["seed"]));
  }
  if (!doc.contains("data")) reader.add("/data", "required section is missing");
  else if (!doc["data"].is_object()) reader.add("/data", std::string("must be an object, got ") + doc["data"].type_name());
  else {
    if (doc["data"].empty()) reader.add("/data", "must name at least one pipeline (train, eval)");
    for (const auto& [key, value] : doc["data"].items()) {
      const std::string p = "/data/" + ramjet::pointer_token(key);
      if (key == "train") plan.train_data = read_pipeline(value, p, reader, plan.seed);
      else if (key == "eval") plan.eval_data = read_pipeline(value, p, reader, plan.seed);
      else reader.add(p, "unknown pipeline (expected train, eval)");
    }
  }
  if (doc.contains("model")) {
    try {
      plan.graph = build_graph(doc["model"], plan.origin, "/model");
      plan.warnings = model_warnings(*plan.graph, "/model");
    } catch (const ManifestError& e) {
      reader.add(e.pointer, e.message);
    }
  }
  if (doc.contains("train")) plan.train = read_train(doc["train"], reader, plan.seed);
  if (doc.contains("export")) plan.exporting = read_export(doc["export"], reader, plan.seed);

  if (plan.train && plan.graph) check_monitors(*plan.train, plan.graph->ir, reader);
  if (doc.contains("train") && !doc.contains("model")) reader.add("/model", "training needs a model");
  if (doc.contains("model") && !doc.contains("train")) reader.add("/train", "a model needs a train section to run");
  if (doc.contains("export") && !doc.contains("model")) reader.add("/model", "exporting needs a model");
  if (doc.contains("train") && doc.contains("data") && doc["data"].is_object() && !doc["data"].contains("train"))
    reader.add("/data/train", "training needs a train input pipeline");
  if (plan.exporting && doc.contains("data") && doc["data"].is_object() &&
      !doc["data"].contains(plan.exporting->calibration_data))
    reader.add("/export/calibration/data", "calibration reads the " + plan.exporting->calibration_data +
                                                " pipeline, and the manifest has none");
  // The backend judges the optimizer and the policy's dtypes once everything they depend on reads well.
  if (plan.train && registry.provider(RAMJET_KIND_BACKEND, plan.train->backend.type())) {
    try {
      check_training_options(plan, reader);
    } catch (const InvalidInput& e) {  // the policy refused its configuration or a graph node
      reader.add(plan.train->precision ? plan.train->precision->pointer : "/train", e.what());
    }
  }
  // Last, as it reads the data's first element: only a manifest with no other problem is worth it.
  if (out.problems.empty()) check_data_against_model(plan, reader);
  return out;
}

Plan require_plan(const PipelineManifest& manifest, PluginRegistry& registry) {
  PlanReading reading = read_plan(manifest, registry);
  if (reading.problems.empty()) return std::move(reading.plan);
  std::string text = std::to_string(reading.problems.size()) + (reading.problems.size() == 1 ? " problem" : " problems") +
                     " in " + manifest.path.string() + ":";
  for (const auto& p : reading.problems) text += "\n  " + manifest.where(p.pointer) + ": " + p.message;
  throw InvalidInput(text);
}

}  // namespace ramjet::core
