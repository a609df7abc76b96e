#include "data_model_match.hpp"

#include "ramjet/plugin/failure.hpp"
#include "ramjet/plugin/seeds.hpp"
#include "ramjet/plugin/tensor.hpp"

#include <ramjet/sdk/fields.hpp>

#include <exception>
#include <optional>

namespace ramjet::core {
namespace {

using nlohmann::json;

std::string shape_text(const json& shape) {
  std::string t = "[";
  for (size_t i = 0; i < shape.size(); ++i) t += (i ? ", " : "") + shape[i].dump();
  return t + "]";
}

// A component's failure as a problem: at the pointer its message names when it names one in this manifest
// ("m.json#/data/train/source/images: ..."), else at `pointer`.
void add_failure(SectionReader& reader, const std::string& pointer, const std::string& what) {
  const std::string prefix = reader.origin().where("");
  if (what.rfind(prefix, 0) == 0) {
    const size_t colon = what.find(": ", prefix.size());
    if (colon != std::string::npos) {
      reader.add(what.substr(prefix.size(), colon - prefix.size()), what.substr(colon + 2));
      return;
    }
  }
  reader.add(pointer, what);
}

// The first element of `spec`'s pipeline, made as the pipeline makes it; nothing (with a problem added) when a
// component fails, or when the source is empty.
std::optional<Example> first_element(const Plan& plan, const PipelineSpec& spec, SectionReader& reader) {
  PluginRegistry& registry = reader.registry();
  std::string at = spec.source.pointer;
  try {
    DataSource source(registry.component(RAMJET_KIND_DATA_SOURCE, spec.source.type()), plan.create_args(spec.source));
    Example element;
    if (source.random_access()) {
      if (source.cardinality() < 1) return std::nullopt;
      source.get(0, element);
    } else if (!source.next(element)) {
      return std::nullopt;
    }
    uint64_t stage = 0;
    for (const auto* list : {&spec.map, &spec.augment})
      for (const ComponentSpec& t : *list) {
        at = t.pointer;
        Transform transform(registry.component(RAMJET_KIND_TRANSFORM, t.type()), plan.create_args(t));
        transform.apply(element, element_seed(plan.seed, 0, 0, ++stage));
      }
    return element;
  } catch (const InvalidInput& e) {
    // A pipeline told to skip bad elements may meet one first; the run would go on, so validation does not judge.
    if (spec.on_error != OnError::kSkip) add_failure(reader, at, e.what());
  }
  return std::nullopt;
}

std::string tensor_names(const Example& element) {
  std::string out;
  for (const auto& entry : element.entries) out += (out.empty() ? "" : ", ") + entry.name;
  return out.empty() ? "none" : out;
}

json shape_of(const DLTensor& t) { return json(std::vector<int64_t>(t.shape, t.shape + t.ndim)); }

// One tensor the model reads: present, of `shape` and (when `dtype` is not empty) `dtype`.
void match(const Example& element, const std::string& name, const json& shape, const std::string& dtype,
           const std::string& model_pointer, const PipelineSpec& spec, SectionReader& reader) {
  const std::string data = spec.pointer + (spec.map.empty() && spec.augment.empty() ? "/source" : "");
  const std::string after = spec.map.empty() && spec.augment.empty() ? "" : " after its transforms";
  const DLTensor* t = element.find(name);
  if (t == nullptr) {
    std::string message = "'" + name + "' is not in the data: the pipeline at " + data + " gives " +
                          tensor_names(element) + after;
    std::vector<std::string> names;
    for (const auto& entry : element.entries) names.push_back(entry.name);
    if (auto guess = ramjet::closest_word(name, names)) message += " (did you mean '" + *guess + "'?)";
    reader.add(model_pointer, message);
    return;
  }
  if (shape_of(*t) != shape)
    reader.add(model_pointer, "'" + name + "' is " + shape_text(shape) + " per example here, but the pipeline at " +
                                  data + " gives " + shape_text(shape_of(*t)) + after);
  else if (!dtype.empty() && dtype_to_string(t->dtype) != dtype)
    reader.add(model_pointer, "'" + name + "' is " + dtype + " here, but the pipeline at " + data + " gives " +
                                  dtype_to_string(t->dtype) + after +
                                  (dtype == "float32"  ? " (a normalize or cast transform in its map makes float32)"
                                   : dtype == "int32" ? " (a cast transform with \"key\": \"" + name +
                                                            "\" in its map makes int32)"
                                                      : ""));
}

void check_pipeline(const Plan& plan, const PipelineSpec& spec, SectionReader& reader) {
  const size_t before = reader.problem_count();
  std::optional<Example> element = first_element(plan, spec, reader);
  if (!element || reader.problem_count() != before) return;
  const json& ir = plan.graph->ir;
  for (const auto& input : ir["inputs"]) {
    const std::string name = input["name"].get<std::string>();
    match(*element, name, input["shape"], input["dtype"].get<std::string>(), "/model/input/" + ramjet::pointer_token(name),
          spec, reader);
  }
  // The labels as the loss reads them: int32 class IDs for the sparse cross-entropy, float32 targets otherwise (the
  // graph's labels dtype). The backend takes them as the data gives them, so a float label would fail at the
  // first step.
  if (ir.contains("labels") && ir.contains("loss"))
    match(*element, ir["labels"]["name"].get<std::string>(), ir["labels"]["shape"],
          ir["labels"].value("dtype", std::string()), "/model/loss/labels", spec, reader);
}

}  // namespace

void check_data_against_model(const Plan& plan, SectionReader& reader) {
  if (!plan.graph || !plan.train) return;
  for (const auto* spec : {&plan.train_data, &plan.eval_data})
    if (*spec) check_pipeline(plan, **spec, reader);
}

}  // namespace ramjet::core
