// The "optimizer" compile option every training backend reads ({"type": "adam", "beta_1": 0.9, ...}): Keras's
// optimizers and their defaults, declared once so that `ramjet validate` and every backend judge it alike. A
// backend names the types it runs; the settings of each type are the same everywhere.
#ifndef RAMJET_SDK_OPTIMIZER_OPTIONS_HPP
#define RAMJET_SDK_OPTIMIZER_OPTIONS_HPP

#include <ramjet/abi.h>
#include <ramjet/sdk/error.hpp>
#include <ramjet/sdk/fields.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace ramjet {

struct OptimizerSpec {
  enum class Type { sgd, adam, adamw, rmsprop };
  Type type = Type::adam;
  double momentum = 0.0;  // sgd, rmsprop
  bool nesterov = false;  // sgd
  double beta_1 = 0.9, beta_2 = 0.999;  // adam, adamw
  double epsilon = 1e-7;  // adam, adamw, rmsprop
  double rho = 0.9;       // rmsprop
  bool centered = false;  // rmsprop
  double weight_decay = 0.0;  // sgd/adam/rmsprop: L2 added to the gradient; adamw: decoupled
  bool decay_all = false;     // adamw: decay every trainable parameter, not only those of rank >= 2
};

// One thing wrong with compile options: RAMJET_ERR_INVALID_ARGUMENT for malformed options, RAMJET_ERR_UNSUPPORTED
// for well-formed ones the backend cannot run.
struct OptionIssue {
  ramjet_status status;
  Problem problem;  // pointer relative to the options object
};

inline const std::vector<std::string>& optimizer_types() {
  static const std::vector<std::string> types{"sgd", "adam", "adamw", "rmsprop"};
  return types;
}

// The fields of one optimizer type, defaults included: the one declaration the options check and the optimizer's
// construction share. learning_rate is accepted (and must be > 0), but the rate an update uses is always
// ramjet_update_args.learning_rate, after the host's schedules.
inline Fields optimizer_fields(const std::string& type) {
  Fields fields{Field::string("type").one_of(optimizer_types()).fallback("adam"),
                Field::number("learning_rate").above(0).doc("accepted; updates use ramjet_update_args.learning_rate")};
  if (type == "sgd") {
    fields.add(Field::number("momentum").at_least(0).below(1).fallback(0.0));
    fields.add(Field::boolean("nesterov").fallback(false));
  } else if (type == "rmsprop") {  // Keras's RMSprop defaults
    fields.add(Field::number("rho").at_least(0).below(1).fallback(0.9).doc("decay of the mean square"));
    fields.add(Field::number("momentum").at_least(0).below(1).fallback(0.0).doc("0: no momentum slot"));
    fields.add(Field::number("epsilon").above(0).fallback(1e-7));
    fields.add(Field::boolean("centered").fallback(false).doc("divide by the gradient's estimated variance"));
  } else {
    fields.add(Field::number("beta_1").at_least(0).below(1).fallback(0.9));
    fields.add(Field::number("beta_2").at_least(0).below(1).fallback(0.999));
    fields.add(Field::number("epsilon").above(0).fallback(1e-7));
  }
  // Keras's AdamW default; the others default to none.
  fields.add(Field::number("weight_decay").at_least(0).fallback(type == "adamw" ? 0.004 : 0.0));
  if (type == "adamw")
    fields.add(Field::boolean("decay_all").fallback(false).doc(
        "decay every trainable parameter; false: only those of rank >= 2 (kernels, embeddings), not biases or norms"));
  return fields;
}

// Judges options["optimizer"] (null or absent: adam) for a backend that runs `runs` (a subset of
// optimizer_types()); `backend` names it in messages ("onednn cpu backend").
inline void judge_optimizer(const nlohmann::json& o, const std::vector<std::string>& runs, const std::string& backend,
                            std::vector<OptionIssue>& out) {
  if (o.is_null()) return;
  if (!o.is_object()) {
    out.push_back({RAMJET_ERR_INVALID_ARGUMENT, {"/optimizer", "must be an object, got " + quote_value(o)}});
    return;
  }
  const nlohmann::json type = o.value("type", nlohmann::json("adam"));
  if (!type.is_string()) {
    out.push_back({RAMJET_ERR_INVALID_ARGUMENT, {"/optimizer/type", "must be a string, got " + quote_value(type)}});
    return;
  }
  const std::string name = type.get<std::string>();
  if (std::find(runs.begin(), runs.end(), name) == runs.end()) {
    std::string list;
    for (const auto& r : runs) list += (list.empty() ? "" : ", ") + r;
    std::string message = "optimizer type '" + name + "' is not supported by the " + backend + " (" + list + ")";
    if (auto guess = closest_word(name, runs)) message += "; did you mean '" + *guess + "'?";
    out.push_back({RAMJET_ERR_UNSUPPORTED, {"/optimizer/type", message}});
    return;
  }
  Problems problems;
  optimizer_fields(name).check(o, "/optimizer", problems);
  for (auto& p : problems) out.push_back({RAMJET_ERR_INVALID_ARGUMENT, std::move(p)});
}

// The optimizer of judged options (judge_optimizer found nothing), defaults filled in.
inline OptimizerSpec read_optimizer(const nlohmann::json& o) {
  OptimizerSpec spec;
  if (o.is_null()) return spec;
  const std::string type = o.value("type", std::string("adam"));
  const nlohmann::json f = optimizer_fields(type).with_defaults(o);
  spec.type = type == "sgd"     ? OptimizerSpec::Type::sgd
              : type == "adam"  ? OptimizerSpec::Type::adam
              : type == "adamw" ? OptimizerSpec::Type::adamw
                                : OptimizerSpec::Type::rmsprop;
  if (spec.type == OptimizerSpec::Type::sgd) {
    spec.momentum = f.at("momentum").get<double>();
    spec.nesterov = f.at("nesterov").get<bool>();
  } else if (spec.type == OptimizerSpec::Type::rmsprop) {
    spec.rho = f.at("rho").get<double>();
    spec.momentum = f.at("momentum").get<double>();
    spec.epsilon = f.at("epsilon").get<double>();
    spec.centered = f.at("centered").get<bool>();
  } else {
    spec.beta_1 = f.at("beta_1").get<double>();
    spec.beta_2 = f.at("beta_2").get<double>();
    spec.epsilon = f.at("epsilon").get<double>();
  }
  spec.weight_decay = f.at("weight_decay").get<double>();
  if (spec.type == OptimizerSpec::Type::adamw) spec.decay_all = f.at("decay_all").get<bool>();
  return spec;
}

// Every issue of `issues` in one error message, and the status it carries: UNSUPPORTED when all are about what the
// backend cannot run, else INVALID_ARGUMENT.
inline Error options_error(const std::vector<OptionIssue>& issues) {
  ramjet_status status = RAMJET_ERR_UNSUPPORTED;
  std::string text;
  for (const auto& [s, p] : issues) {
    if (s != RAMJET_ERR_UNSUPPORTED) status = s;
    text += (text.empty() ? "" : "; ") + (p.pointer.empty() ? std::string() : p.pointer + ": ") + p.message;
  }
  return Error(status, "compile options: " + text);
}

}  // namespace ramjet

#endif  // RAMJET_SDK_OPTIMIZER_OPTIONS_HPP
