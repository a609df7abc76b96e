// The `train` section: the core's own words (epochs, schedules, callbacks, checkpoints, ...) checked against their
// declarations and read into TrainConfig, whose members hold the defaults; the backend, precision policy and
// strategy are components that judge their own configurations.
#include "train_section.hpp"

#include "ramjet/plugin/machine_limits.hpp"

#include <algorithm>

namespace ramjet::core {
namespace {

using nlohmann::json;
using ramjet::Field;
using ramjet::Fields;

// The training loss or accuracy, or val_loss / val_<metric> on the eval data; plan.cpp checks the metric against the
// model's once both are read.
Field monitor_field() {
  return Field::string("monitor").rule([](const json& v) -> std::optional<std::string> {
    const std::string m = v.get<std::string>();
    if (m == "loss" || m == "accuracy" || (m.rfind("val_", 0) == 0 && m.size() > 4)) return std::nullopt;
    return "must be loss, accuracy, val_loss or val_<metric> (a metric of the model's), got " + quote_value(v);
  });
}

const Fields& train_fields() {
  static const Fields fields{
      Field::any("backend").doc("a backend component: its name, or an object with \"type\" and its options"),
      Field::any("precision").doc("float32, or a precision_policy component (name or object with \"type\")"),
      Field::any("strategy").doc("single, or a strategy component (name or object with \"type\")"),
      Field::object("optimizer", Fields{Field::string("type").required(), Field::number("learning_rate").above(0)}
                                     .allow_unknown()),
      Field::integer("epochs").at_least(1),
      Field::any("schedule").doc("a learning-rate schedule (constant, step, cosine, one_cycle)"),
      Field::number("clip_norm").above(0),
      Field::integer("accumulate").at_least(1),
      Field::object("reduce_lr_on_plateau",
                    Fields{monitor_field(), Field::number("min_delta").at_least(0), Field::number("factor").above(0).below(1),
                           Field::integer("patience").at_least(0), Field::integer("cooldown").at_least(0),
                           Field::number("min_lr").at_least(0)}),
      Field::object("early_stopping", Fields{monitor_field(), Field::number("min_delta").at_least(0),
                                             Field::integer("patience").at_least(0),
                                             Field::boolean("restore_best_weights")}),
      Field::object("checkpoint", Fields{Field::string("dir").required(), Field::integer("every_steps").at_least(0),
                                         Field::integer("keep").at_least(1)}),
      Field::string("tensorboard")
          .doc("a folder for TensorBoard event files (train/ and validation/ under it)")
          .rule([](const json& v) -> std::optional<std::string> {
            if (!v.get<std::string>().empty()) return std::nullopt;
            return "must name a folder, got an empty string";
          }),
      Field::integer("threads").at_least(0).rule([](const json& v) -> std::optional<std::string> {
        if (v.get<int64_t>() <= max_threads()) return std::nullopt;
        return "must be at most " + max_threads_explained() + ", got " + v.dump();
      }),
  };
  return fields;
}

const Fields& schedule_fields() {
  static const Fields fields{
      Field::string("type").one_of({"constant", "step", "cosine", "one_cycle"}).required(),
      Field::integer("step_size").at_least(1), Field::number("gamma").at_least(0).at_most(1), Field::array("boundaries"),
      Field::array("values"), Field::integer("warmup_steps").at_least(0), Field::integer("decay_steps").at_least(1),
      Field::number("alpha").at_least(0).at_most(1), Field::integer("total_steps").at_least(2),
      Field::number("max_lr").above(0).at_most(1e3), Field::number("pct_start").at_least(0).at_most(1),
      Field::number("div_factor").at_least(1).at_most(1e9), Field::number("final_div_factor").at_least(1).at_most(1e12)};
  return fields;
}

// A bucket of a few GiB would only be one copy of every gradient in flight at once, with no overlap left.
constexpr double kMaxBucketMb = 4096;

std::optional<double> read_bucket_mb(const json& v) {
  if (!v.is_number() || !(v.get<double>() > 0) || v.get<double>() > kMaxBucketMb) return std::nullopt;
  return v.get<double>();
}

}  // namespace

std::optional<ScheduleConfig> read_schedule(const json& v, const std::string& pointer, std::vector<Problem>& problems) {
  ramjet::Problems found;
  schedule_fields().check(v, pointer, found);
  for (auto& p : found) problems.push_back({p.pointer, p.message});
  if (!found.empty()) return std::nullopt;
  const size_t before = problems.size();
  struct {
    std::vector<Problem>& list;
    void add(std::string p, std::string m) { list.push_back({std::move(p), std::move(m)}); }
  } reader{problems};
  ScheduleConfig s;
  s.type = v.at("type").get<std::string>();
  s.step_size = v.value("step_size", s.step_size);
  s.gamma = v.value("gamma", s.gamma);
  s.warmup_steps = v.value("warmup_steps", s.warmup_steps);
  if (v.contains("decay_steps")) s.decay_steps = v["decay_steps"].get<int64_t>();
  s.alpha = v.value("alpha", s.alpha);
  if (v.contains("total_steps")) s.total_steps = v["total_steps"].get<int64_t>();
  if (v.contains("max_lr")) s.max_lr = v["max_lr"].get<double>();
  s.pct_start = v.value("pct_start", s.pct_start);
  s.div_factor = v.value("div_factor", s.div_factor);
  s.final_div_factor = v.value("final_div_factor", s.final_div_factor);
  if (s.type == "step") {
    if (v.contains("boundaries") || v.contains("values")) {
      const json& b = v.value("boundaries", json::array());
      const json& values = v.value("values", json::array());
      const bool integers = std::all_of(b.begin(), b.end(), [](const json& x) { return x.is_number_integer(); });
      const bool numbers = std::all_of(values.begin(), values.end(), [](const json& x) { return x.is_number(); });
      if (!integers) reader.add(pointer + "/boundaries", "must be an array of integer steps");
      else if (!numbers || values.size() != b.size() + 1)
        reader.add(pointer + "/values", "needs one more number than boundaries");
      else s.boundaries = b.get<std::vector<int64_t>>(), s.values = values.get<std::vector<double>>();
    } else if (s.step_size < 1) {
      reader.add(pointer + "/step_size", "required: decay every step_size steps (or give boundaries and values)");
    }
  }
  if (problems.size() != before) return std::nullopt;
  return s;
}

namespace {

MonitorConfig read_monitor(const json& v, MonitorConfig m) {
  m.metric = v.value("monitor", m.metric);
  m.min_delta = v.value("min_delta", m.min_delta);
  return m;
}

}  // namespace

std::optional<TrainConfig> read_train(const json& t, SectionReader& reader, uint64_t seed) {
  // Read as far as it goes even with problems, so the backend can still judge the optimizer (the plan is used only
  // when there are none).
  const size_t before = reader.problem_count();
  if (!reader.check(train_fields(), t, "/train") && !t.is_object()) return std::nullopt;
  TrainConfig c;
  // Components: the backend is always one; "float32" and "single" are built in and need none.
  if (auto b = reader.component(t.value("backend", json("cpu")), "/train/backend", RAMJET_KIND_BACKEND, true, seed)) c.backend = *b;
  else return std::nullopt;  // nothing else can be judged without the backend
  if (t.contains("precision") && t["precision"] != "float32")
    c.precision = reader.component(t["precision"], "/train/precision", RAMJET_KIND_PRECISION_POLICY, true, seed);
  if (t.contains("strategy") && t["strategy"] != "single") {
    json strategy = t["strategy"];
    if (strategy.is_object() && strategy.contains("bucket_mb")) {
      if (auto mb = read_bucket_mb(strategy["bucket_mb"])) c.bucket_mb = *mb;
      else reader.add("/train/strategy/bucket_mb", "must be a number of MiB above 0 and at most " +
                                                       std::to_string(static_cast<int>(kMaxBucketMb)) + ", got " +
                                                       ramjet::quote_value(strategy["bucket_mb"]));
      strategy.erase("bucket_mb");
    }
    c.strategy = reader.component(strategy, "/train/strategy", RAMJET_KIND_STRATEGY, true, seed);
  }

  if (t.contains("optimizer")) c.optimizer = t["optimizer"];
  if (t.contains("schedule")) {
    std::vector<Problem> problems;
    if (auto s = read_schedule(t["schedule"], "/train/schedule", problems)) c.schedule = *s;
    for (auto& p : problems) reader.add(std::move(p.pointer), std::move(p.message));
  }
  // The rest is read only from a section without problems (a value of the wrong type must not be read).
  if (reader.problem_count() != before) return c;
  c.learning_rate = c.optimizer.value("learning_rate", c.learning_rate);
  c.epochs = t.value("epochs", c.epochs);
  c.clip_norm = t.value("clip_norm", c.clip_norm);
  c.accumulate = t.value("accumulate", c.accumulate);
  c.threads = t.value("threads", c.threads);
  if (t.contains("reduce_lr_on_plateau")) {
    const json& p = t["reduce_lr_on_plateau"];
    ReduceLrOnPlateauConfig r;
    r.monitor = read_monitor(p, r.monitor);
    r.factor = p.value("factor", r.factor);
    r.patience = p.value("patience", r.patience);
    r.cooldown = p.value("cooldown", r.cooldown);
    r.min_lr = p.value("min_lr", r.min_lr);
    c.reduce_lr_on_plateau = r;
  }
  if (t.contains("early_stopping")) {
    const json& e = t["early_stopping"];
    EarlyStoppingConfig s;
    s.monitor = read_monitor(e, s.monitor);
    s.patience = e.value("patience", s.patience);
    s.restore_best_weights = e.value("restore_best_weights", s.restore_best_weights);
    c.early_stopping = s;
  }
  if (t.contains("checkpoint")) {
    const json& k = t["checkpoint"];
    CheckpointConfig cc;
    cc.dir = reader.origin().resolve(k.at("dir").get<std::string>());
    cc.every_steps = k.value("every_steps", cc.every_steps);
    cc.keep = k.value("keep", cc.keep);
    c.checkpoint = cc;
  }
  if (t.contains("tensorboard")) c.tensorboard = reader.origin().resolve(t["tensorboard"].get<std::string>());
  return c;
}

}  // namespace ramjet::core
