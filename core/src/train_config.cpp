#include "ramjet/core/train_config.hpp"

#include "ramjet/core/failure.hpp"

#include <set>

namespace ramjet::core {

TrainConfig read_train_config(const PipelineManifest& manifest) {
  using nlohmann::json;
  const json& t = manifest.doc.at("train");
  auto fail = [&](const std::string& pointer, const std::string& message) {
    return ManifestError(manifest.where(pointer), pointer, message);
  };
  if (!t.is_object()) throw fail("/train", "must be an object");
  static const std::set<std::string> known = {"backend", "precision", "strategy", "optimizer", "epochs", "schedule",
                                              "clip_norm", "accumulate", "reduce_lr_on_plateau", "early_stopping",
                                              "checkpoint", "threads"};
  for (const auto& [key, value] : t.items())
    if (!known.count(key)) throw fail("/train/" + key, "unknown field");
  TrainConfig c;
  auto text = [&](const char* key, std::string& out) {
    if (!t.contains(key)) return;
    if (!t[key].is_string() || t[key].get<std::string>().empty()) throw fail(std::string("/train/") + key, "must be a non-empty string");
    out = t[key].get<std::string>();
  };
  auto positive = [&](const json& obj, const std::string& pointer, int64_t fallback, int64_t min) {
    if (obj.is_null()) return fallback;
    if (!obj.is_number_integer() || obj.get<int64_t>() < min)
      throw fail(pointer, "must be an integer >= " + std::to_string(min) + ", got " + obj.dump());
    return obj.get<int64_t>();
  };
  if (t.contains("backend") && t["backend"].is_object()) {
    const json& b = t["backend"];
    if (!b.contains("type") || !b["type"].is_string()) throw fail("/train/backend/type", "required: the backend's name");
    c.backend = b["type"];
    c.backend_config = b;
    c.backend_config.erase("type");
  } else {
    text("backend", c.backend);
  }
  text("precision", c.precision);
  if (t.contains("strategy") && t["strategy"].is_object()) {
    const json& st = t["strategy"];
    if (!st.contains("type") || !st["type"].is_string()) throw fail("/train/strategy/type", "required: the strategy's name");
    c.strategy = st["type"];
    c.strategy_config = st;
    c.strategy_config.erase("type");
  } else {
    text("strategy", c.strategy);
  }
  if (c.precision != "float32" && c.precision != "mixed_bfloat16" && c.precision != "mixed_float16")
    throw fail("/train/precision", "must be float32, mixed_bfloat16 or mixed_float16");
  c.epochs = positive(t.value("epochs", json()), "/train/epochs", 1, 1);
  c.accumulate = positive(t.value("accumulate", json()), "/train/accumulate", 1, 1);
  c.threads = positive(t.value("threads", json()), "/train/threads", 0, 0);
  if (t.contains("clip_norm")) {
    if (!t["clip_norm"].is_number() || t["clip_norm"].get<double>() <= 0) throw fail("/train/clip_norm", "must be a positive number");
    c.clip_norm = t["clip_norm"].get<double>();
  }
  const json optimizer = t.value("optimizer", json{{"type", "adam"}});
  if (!optimizer.is_object() || !optimizer.contains("type") || !optimizer["type"].is_string())
    throw fail("/train/optimizer", "must be an object with a \"type\" (sgd, adam, adamw)");
  const std::string type = optimizer["type"];
  static const std::map<std::string, std::set<std::string>> optimizer_fields = {
      {"sgd", {"type", "learning_rate", "momentum", "nesterov", "weight_decay"}},
      {"adam", {"type", "learning_rate", "beta_1", "beta_2", "epsilon", "weight_decay"}},
      {"adamw", {"type", "learning_rate", "beta_1", "beta_2", "epsilon", "weight_decay"}}};
  auto fields = optimizer_fields.find(type);
  if (fields == optimizer_fields.end()) throw fail("/train/optimizer/type", "unknown optimizer '" + type + "' (sgd, adam, adamw)");
  for (const auto& [key, value] : optimizer.items()) {
    if (!fields->second.count(key)) throw fail("/train/optimizer/" + key, "unknown field for " + type);
    if (key != "type" && key != "nesterov" && !value.is_number()) throw fail("/train/optimizer/" + key, "must be a number");
  }
  c.optimizer = optimizer;
  c.learning_rate = optimizer.value("learning_rate", type == "sgd" ? 0.01 : 0.001);
  if (!(c.learning_rate > 0)) throw fail("/train/optimizer/learning_rate", "must be positive");
  c.schedule = t.value("schedule", json());
  for (const char* key : {"reduce_lr_on_plateau", "early_stopping"}) {
    if (!t.contains(key)) continue;
    if (!t[key].is_object()) throw fail(std::string("/train/") + key, "must be an object");
    const std::string monitor = t[key].value("monitor", std::string("val_loss"));
    if (monitor != "val_loss" && monitor != "val_accuracy" && monitor != "loss" && monitor != "accuracy")
      throw fail(std::string("/train/") + key + "/monitor", "must be val_loss, val_accuracy, loss or accuracy");
    (std::string(key) == "early_stopping" ? c.early_stopping : c.reduce_lr_on_plateau) = t[key];
  }
  if (t.contains("checkpoint")) {
    const json& k = t["checkpoint"];
    if (!k.is_object() || !k.contains("dir") || !k["dir"].is_string())
      throw fail("/train/checkpoint", "must be an object with a \"dir\"");
    CheckpointConfig cc;
    cc.dir = k["dir"];
    cc.every_steps = positive(k.value("every_steps", json()), "/train/checkpoint/every_steps", 0, 0);
    cc.keep = positive(k.value("keep", json()), "/train/checkpoint/keep", 3, 1);
    c.checkpoint = cc;
  }
  return c;
}

}  // namespace ramjet::core
