#include "options.hpp"

#include <ramjet/sdk/dtype.hpp>

#include <limits>

namespace cuda_plugin {
namespace {

using ramjet::Field;
using ramjet::Fields;
using ramjet::OptionIssue;
using nlohmann::json;

Fields option_fields() {
  return {Field::integer("batch").at_least(1).fallback(32).doc("the batch the program is built for"),
          Field::integer("threads").at_least(0).at_most(std::numeric_limits<int>::max()).doc("accepted, unused"),
          Field::string("precision").one_of({"float32", "mixed_float16"}).doc("float32 or mixed_float16"),
          Field::any("optimizer").doc("{\"type\": sgd|adam|adamw, ...}; null or absent: adam"),
          Field::any("layer_dtypes").doc("{\"<node>\": {\"compute\": float32|float16, \"variable\": float32}}")};
}

// Each entry: compute float32 or float16, variables float32. A layer the policy keeps in float32 (softmax, the
// normalisations) computes in float32 arithmetic inside its kernel whatever its neighbours hold.
void judge_layer_dtypes(const json& layers, std::vector<OptionIssue>& out) {
  if (!layers.is_object()) {
    out.push_back({RAMJET_ERR_INVALID_ARGUMENT, {"/layer_dtypes", "must be an object mapping node names to "
                                                                  "{\"compute\", \"variable\"}"}});
    return;
  }
  const Fields fields{Field::string("compute").required(), Field::string("variable").required()};
  for (const auto& [node, entry] : layers.items()) {
    const std::string pointer = "/layer_dtypes/" + ramjet::pointer_token(node);
    ramjet::Problems problems;
    fields.check(entry, pointer, problems);
    for (auto& p : problems) out.push_back({RAMJET_ERR_INVALID_ARGUMENT, std::move(p)});
    if (!problems.empty()) continue;
    const std::string compute = entry.at("compute"), variable = entry.at("variable");
    if (compute != "float32" && compute != "float16")
      out.push_back({RAMJET_ERR_UNSUPPORTED, {pointer + "/compute", "node '" + node + "' computes in " + compute +
                                                                        "; the cuda backend computes in float32 or "
                                                                        "float16 (mixed_float16)"}});
    if (variable != "float32")
      out.push_back({RAMJET_ERR_UNSUPPORTED, {pointer + "/variable", "node '" + node + "' keeps its variables in " +
                                                                         variable + "; the cuda backend keeps them "
                                                                                    "in float32"}});
  }
}

}  // namespace

const std::vector<std::string>& cuda_optimizer_types() {
  static const std::vector<std::string> types{"sgd", "adam", "adamw"};
  return types;
}

std::vector<OptionIssue> option_issues(const json& options) {
  std::vector<OptionIssue> out;
  ramjet::Problems problems;
  option_fields().check(options, "", problems);
  for (auto& p : problems)
    out.push_back({p.pointer == "/precision" ? RAMJET_ERR_UNSUPPORTED : RAMJET_ERR_INVALID_ARGUMENT, std::move(p)});
  if (!options.is_object()) return out;
  if (auto it = options.find("optimizer"); it != options.end())
    ramjet::judge_optimizer(*it, cuda_optimizer_types(), "cuda backend", out);
  if (auto it = options.find("layer_dtypes"); it != options.end()) {
    judge_layer_dtypes(*it, out);
    if (options.contains("precision"))
      out.push_back({RAMJET_ERR_INVALID_ARGUMENT, {"/layer_dtypes", "give either precision or layer_dtypes, not both"}});
  }
  return out;
}

CompileOptions parse_options(const json& json_options) {
  const std::vector<OptionIssue> issues = option_issues(json_options);
  if (!issues.empty()) throw ramjet::options_error(issues);
  const json o = option_fields().with_defaults(json_options);
  CompileOptions options;
  options.batch = o.at("batch").get<int64_t>();
  if (o.contains("precision")) options.half = o["precision"] == "mixed_float16";
  if (o.contains("layer_dtypes"))
    for (const auto& [node, entry] : o["layer_dtypes"].items()) options.half |= entry.at("compute") == "float16";
  if (o.contains("optimizer")) options.optimizer = ramjet::read_optimizer(o["optimizer"]);
  return options;
}

}  // namespace cuda_plugin
