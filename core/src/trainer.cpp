#include "ramjet/core/trainer.hpp"

#include "ramjet/core/backend.hpp"
#include "ramjet/core/checkpoint.hpp"
#include "ramjet/core/failure.hpp"
#include "ramjet/core/graph.hpp"
#include "ramjet/core/input_pipeline.hpp"
#include "ramjet/core/log.hpp"
#include "ramjet/core/lr_schedule.hpp"
#include "ramjet/core/model_components.hpp"
#include "ramjet/core/seeds.hpp"
#include "ramjet/core/train_config.hpp"
#include "ramjet/core/training_callbacks.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <ostream>

namespace ramjet::core {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kDropoutStage = 0xD0D0;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

float scalar_f32(const Example& e, const char* name, const std::string& backend) {
  const DLTensor* t = e.find(name);
  if (t == nullptr || t->dtype.code != kDLFloat || t->dtype.bits != 32)
    throw RuntimeFailure(backend + ": forward did not write a float32 '" + name + "'");
  return *static_cast<const float*>(first_byte(*t));
}

int64_t scalar_count(const Example& e, const char* name) {
  const DLTensor* t = e.find(name);
  if (t == nullptr || t->dtype.code != kDLInt || t->dtype.bits != 32) return -1;
  return *static_cast<const int32_t*>(first_byte(*t));
}

struct Metrics {
  double loss_sum = 0;
  int64_t correct = 0;
  int64_t samples = 0;
  bool has_accuracy = true;
  void add(double loss, int64_t right, int64_t n) {
    loss_sum += loss * static_cast<double>(n);
    samples += n;
    if (right < 0) has_accuracy = false;
    else correct += right;
  }
  double loss() const { return samples ? loss_sum / static_cast<double>(samples) : 0.0; }
  double accuracy() const { return samples ? static_cast<double>(correct) / static_cast<double>(samples) : 0.0; }
};

// Keras-style progress: a bar redrawn in place on a terminal, one line per epoch elsewhere.
class Progress {
 public:
  Progress(std::ostream* out, bool terminal, int64_t epochs) : out_(out), terminal_(terminal), epochs_(epochs) {}
  void step(int64_t epoch, int64_t step, int64_t steps, const Metrics& m, double samples_per_s, double elapsed) {
    if (!out_ || !terminal_) return;
    if (seconds_since(last_) < 0.1 && step != steps) return;
    last_ = Clock::now();
    char bar[31] = {};
    const int filled = steps > 0 ? static_cast<int>(30 * step / steps) : 0;
    for (int i = 0; i < 30; ++i) bar[i] = i < filled ? '=' : (i == filled ? '>' : '.');
    const double eta = steps > 0 && step > 0 ? elapsed * static_cast<double>(steps - step) / static_cast<double>(step) : 0;
    char line[256];
    std::snprintf(line, sizeof line, "\rEpoch %lld/%lld %5lld/%-5lld [%s] - loss: %.4f%s - %.0f samples/s - ETA: %.0fs ",
                  static_cast<long long>(epoch + 1), static_cast<long long>(epochs_), static_cast<long long>(step),
                  static_cast<long long>(steps), bar, m.loss(),
                  m.has_accuracy ? (" - accuracy: " + fixed(m.accuracy())).c_str() : "", samples_per_s, eta);
    *out_ << line << std::flush;
  }
  void epoch_end(const std::string& text) {
    if (!out_) return;
    if (terminal_) *out_ << "\r\033[K";
    *out_ << text << "\n" << std::flush;
  }
  static std::string fixed(double v) {
    char s[32];
    std::snprintf(s, sizeof s, "%.4f", v);
    return s;
  }

 private:
  std::ostream* out_;
  bool terminal_;
  int64_t epochs_;
  Clock::time_point last_{};
};

Metrics evaluate(const PipelineManifest& manifest, PluginRegistry& registry, uint64_t seed, Program& program,
                 const std::string& backend) {
  InputPipeline eval(manifest, "/data/eval", registry, seed);
  Metrics m;
  ramjet_forward_args args{sizeof(ramjet_forward_args), RAMJET_ABI_VERSION, 0, 0, seed, 0};
  Example outputs;
  while (auto batch = eval.next_batch()) {
    const int64_t n = batch->entries.front().tensor->dl_tensor.shape[0];
    outputs = Example{};
    program.forward(args, *batch, outputs);
    m.add(scalar_f32(outputs, "loss", backend), scalar_count(outputs, "correct"), n);
  }
  return m;
}

std::string to_hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) out += digits[c >> 4], out += digits[c & 15];
  return out;
}

std::string from_hex(const nlohmann::json& text) {
  const std::string s = text.is_string() ? text.get<std::string>() : std::string();
  std::string out;
  for (size_t i = 0; i + 1 < s.size(); i += 2) out += static_cast<char>(std::stoi(s.substr(i, 2), nullptr, 16));
  return out;
}

double monitored(const std::string& metric, const Metrics& train, const std::optional<Metrics>& eval) {
  const bool val = metric.rfind("val_", 0) == 0;
  const Metrics& m = val && eval ? *eval : train;
  return metric.find("accuracy") != std::string::npos ? m.accuracy() : m.loss();
}

}  // namespace

nlohmann::json train_model(const PipelineManifest& original, PluginRegistry& registry, const TrainOptions& options) {
  require_valid(original, registry);
  const TrainConfig cfg = read_train_config(original);
  const uint64_t seed = original.doc.value("seed", uint64_t{0});
  // float32 and the built-in single-process strategy need no component; anything else is looked up by name.
  std::optional<PrecisionPolicy> policy;
  if (cfg.precision != "float32") {
    CreateArgs args;
    args.where = original.where("/train/precision");
    args.seed = seed;
    policy.emplace(registry.component(RAMJET_KIND_PRECISION_POLICY, cfg.precision), args);
  }
  std::optional<Strategy> strategy;
  if (cfg.strategy != "single") {
    CreateArgs args;
    args.config = cfg.strategy_config;
    args.where = original.where("/train/strategy");
    args.seed = seed;
    strategy.emplace(registry.component(RAMJET_KIND_STRATEGY, cfg.strategy), args);
  }
  const int32_t rank = strategy ? strategy->rank() : 0;
  const int32_t world = strategy ? strategy->world_size() : 1;
  // The trainer owns the epochs: the training input repeats exactly as often.
  PipelineManifest manifest = original;
  manifest.doc["data"]["train"]["epochs"] = cfg.epochs;
  // Mirrored training: each replica reads its own shard of every epoch.
  if (world > 1) manifest.doc["data"]["train"]["shard"] = {{"count", world}, {"index", rank}};
  std::ostream* const progress_out = rank == 0 ? options.progress : nullptr;
  const bool has_eval = manifest.doc["data"].contains("eval");

  Graph graph = build_graph(manifest);
  InputPipeline train(manifest, "/data/train", registry, seed);
  const int64_t batch_size = train.spec().batch;
  CreateArgs backend_args;
  backend_args.config = cfg.backend_config;
  if (cfg.threads > 0) backend_args.config["threads"] = cfg.threads;
  backend_args.where = manifest.where("/train/backend");
  backend_args.seed = seed;
  Backend backend(registry.component(RAMJET_KIND_BACKEND, cfg.backend), backend_args);
  const std::string backend_name = backend.ref().label();
  auto program = backend.compile(graph.ir, {{"batch", batch_size}, {"precision", cfg.precision}, {"optimizer", cfg.optimizer}});
  {
    Example initial = initial_parameters(graph.ir, seed);
    program->set_state("parameters", initial);
  }
  // Every replica starts from rank 0's weights (after a resume too: they all read the same checkpoint, but the
  // broadcast makes that an invariant rather than an assumption).
  auto broadcast_parameters = [&]() {
    if (!strategy) return;
    Example parameters = program->get_state("parameters");
    for (auto& p : parameters.entries) strategy->broadcast(p.tensor->dl_tensor, 0);
    program->set_state("parameters", parameters);
  };

  const int64_t per_epoch = train.elements_per_epoch();
  const int64_t steps_per_epoch =
      per_epoch < 0 ? -1 : (train.spec().drop_remainder ? per_epoch / batch_size : (per_epoch + batch_size - 1) / batch_size);
  const int64_t total_steps = steps_per_epoch < 0 ? 0 : steps_per_epoch * cfg.epochs / cfg.accumulate;
  auto schedule = make_lr_schedule(cfg.schedule, cfg.learning_rate, total_steps, manifest.path.string(), "/train/schedule");
  std::optional<ReduceLrOnPlateau> plateau;
  if (!cfg.reduce_lr_on_plateau.is_null()) {
    const auto& p = cfg.reduce_lr_on_plateau;
    plateau.emplace(Monitor::of(p.value("monitor", std::string("val_loss")), p.value("min_delta", 1e-4)),
                    p.value("factor", 0.1), p.value("patience", int64_t{10}), p.value("cooldown", int64_t{0}),
                    p.value("min_lr", 0.0));
  }
  std::optional<EarlyStopping> early;
  if (!cfg.early_stopping.is_null()) {
    const auto& e = cfg.early_stopping;
    early.emplace(Monitor::of(e.value("monitor", std::string("val_loss")), e.value("min_delta", 0.0)),
                  e.value("patience", int64_t{3}), e.value("restore_best_weights", false));
  }
  const std::filesystem::path checkpoint_dir =
      cfg.checkpoint ? (std::filesystem::path(cfg.checkpoint->dir).is_absolute() ? std::filesystem::path(cfg.checkpoint->dir)
                                                                                 : manifest.base_dir() / cfg.checkpoint->dir)
                     : std::filesystem::path();

  int64_t step = 0;
  double lr_scale = 1.0;
  nlohmann::json history = nlohmann::json::array();
  if (options.resume) {
    if (!cfg.checkpoint) throw InvalidInput(manifest.where("/train/checkpoint") + ": --resume needs a checkpoint directory");
    if (auto latest = latest_checkpoint(checkpoint_dir)) {
      Checkpoint c = load_checkpoint(*latest);
      program->set_state("parameters", c.parameters);
      if (!c.optimizer.entries.empty()) program->set_state("optimizer", c.optimizer);
      train.restore(c.pipeline);
      step = c.step;
      lr_scale = c.trainer.value("lr_scale", 1.0);
      history = c.trainer.value("history", nlohmann::json::array());
      if (plateau && c.trainer.contains("plateau")) plateau->restore(c.trainer["plateau"]);
      if (early && c.trainer.contains("early_stopping")) early->restore(c.trainer["early_stopping"]);
      if (policy && c.trainer.contains("loss_scaler")) policy->restore_state(from_hex(c.trainer["loss_scaler"]));
    } else {
      log(RAMJET_LOG_WARNING, "checkpoint", "no checkpoint in " + checkpoint_dir.string() + "; starting from scratch");
    }
  }
  broadcast_parameters();
  auto save = [&]() {
    if (!cfg.checkpoint || rank != 0) return;
    Checkpoint c;
    c.step = step;
    c.pipeline = train.state();
    c.trainer = {{"lr_scale", lr_scale}, {"history", history}};
    if (plateau) c.trainer["plateau"] = plateau->state();
    if (early) c.trainer["early_stopping"] = early->state();
    if (policy) c.trainer["loss_scaler"] = to_hex(policy->save_state());
    c.parameters = program->get_state("parameters");
    c.optimizer = program->get_state("optimizer");
    save_checkpoint(checkpoint_dir, c, cfg.checkpoint->keep);
  };

  Progress progress(progress_out, options.terminal, cfg.epochs);
  Metrics epoch_metrics, last_train;
  std::optional<Metrics> last_eval;
  std::optional<Example> best_parameters;
  int64_t epoch = train.state().epoch, micro = 0, epoch_steps = 0, samples = 0;
  bool stopped_early = false;
  bool found_nonfinite = false;  // over the micro-batches of the current update
  int64_t skipped_updates = 0;
  double train_s = 0, epoch_train_s = 0;
  auto epoch_start = Clock::now();
  const auto run_start = Clock::now();
  Example outputs;

  auto end_epoch = [&](int64_t finished) {
    // Throughput over the epoch's wall time, input waits included and evaluation excluded (what Keras's step
    // timings measure).
    const double epoch_wall = seconds_since(epoch_start);
    last_train = epoch_metrics;
    if (has_eval) last_eval = evaluate(manifest, registry, seed, *program, backend_name);
    const double lr_now = schedule->at(step) * lr_scale;
    nlohmann::json h = {{"epoch", finished + 1},
                        {"loss", last_train.loss()},
                        {"lr", lr_now},
                        {"samples_per_s", epoch_wall > 0 ? static_cast<double>(epoch_metrics.samples) / epoch_wall : 0.0},
                        {"compute_s", epoch_train_s},
                        {"wall_s", epoch_wall},
                        {"elapsed_s", seconds_since(run_start)}};
    if (last_train.has_accuracy) h["accuracy"] = last_train.accuracy();
    if (last_eval) h["val_loss"] = last_eval->loss(), h["val_accuracy"] = last_eval->accuracy();
    history.push_back(h);
    char line[320];
    std::snprintf(line, sizeof line, "Epoch %lld/%lld: %lld steps, %.1f s - loss: %.4f%s%s - lr: %.3g",
                  static_cast<long long>(finished + 1), static_cast<long long>(cfg.epochs),
                  static_cast<long long>(epoch_steps), seconds_since(epoch_start), last_train.loss(),
                  last_train.has_accuracy ? (" - accuracy: " + Progress::fixed(last_train.accuracy())).c_str() : "",
                  last_eval ? (" - val_loss: " + Progress::fixed(last_eval->loss()) + " - val_accuracy: " +
                               Progress::fixed(last_eval->accuracy())).c_str()
                            : "",
                  lr_now);
    progress.epoch_end(line);
    if (plateau) {
      const double next = plateau->update(monitored(plateau->monitor().metric, last_train, last_eval), lr_now);
      if (next != lr_now) {
        lr_scale *= next / lr_now;
        log(RAMJET_LOG_INFO, "train", "reduce_lr_on_plateau: learning rate now " + std::to_string(next));
      }
    }
    if (early) {
      early->update(finished, monitored(early->monitor().metric, last_train, last_eval));
      if (early->improved() && early->restore_best()) best_parameters = program->get_state("parameters");
      if (early->should_stop()) stopped_early = true;
    }
    save();
    epoch_metrics = Metrics{};
    epoch_train_s = 0;
    epoch_steps = 0;
    epoch_start = Clock::now();
  };

  // The backend's gradient views stay valid for the program's life: fetched once, not every update.
  std::optional<Example> gradient_views;
  auto gradients = [&]() -> Example& {
    if (!gradient_views) gradient_views = program->get_state("gradients");
    return *gradient_views;
  };

  while (!stopped_early) {
    std::optional<Example> batch = train.next_batch();
    if (!batch) break;
    const int64_t batch_epoch = train.state().epoch;
    if (batch_epoch != epoch) {
      end_epoch(epoch);
      epoch = batch_epoch;
      if (stopped_early) break;
    }
    const auto step_start = Clock::now();
    const int64_t n = batch->entries.empty() ? 0 : batch->entries.front().tensor->dl_tensor.shape[0];
    ramjet_forward_args fwd{sizeof(ramjet_forward_args), RAMJET_ABI_VERSION, 1, 0,
                            element_seed(seed, static_cast<uint64_t>(step), static_cast<uint64_t>(micro), kDropoutStage),
                            step};
    outputs = Example{};
    program->forward(fwd, *batch, outputs);
    const float loss = scalar_f32(outputs, "loss", backend_name);
    const float loss_scale = policy ? policy->loss_scale() : 1.0f;
    if (!std::isfinite(loss))
      throw RuntimeFailure("the loss became " + std::to_string(loss) + " at step " + std::to_string(step + 1) +
                           " (lower the learning rate, or clip gradients with train.clip_norm)");
    epoch_metrics.add(loss, scalar_count(outputs, "correct"), n);
    int32_t nonfinite = 0;
    ramjet_backward_args bwd{sizeof(ramjet_backward_args), RAMJET_ABI_VERSION, loss_scale, micro > 0 ? 1 : 0, nullptr,
                             nullptr, policy ? &nonfinite : nullptr};
    program->backward(bwd);
    found_nonfinite = found_nonfinite || nonfinite != 0;
    if (++micro == cfg.accumulate) {
      if (strategy && world > 1) {
        // Mean over replicas of each replica's mean gradient: the gradient of the global batch.
        for (auto& g : gradients().entries) strategy->all_reduce(g.tensor->dl_tensor, RAMJET_REDUCE_MEAN);
      }
      float scale = 1.0f / (static_cast<float>(cfg.accumulate) * loss_scale);
      if (cfg.clip_norm > 0) {
        double sum = 0;
        for (const auto& g : gradients().entries) {
          const DLTensor& t = g.tensor->dl_tensor;
          const float* v = static_cast<const float*>(first_byte(t));
          for (int64_t i = 0; i < element_count(t); ++i) sum += static_cast<double>(v[i]) * v[i];
        }
        const double norm = std::sqrt(sum) * scale;
        if (norm > cfg.clip_norm) scale *= static_cast<float>(cfg.clip_norm / norm);
      }
      // With dynamic loss scaling an overflowing step is dropped and the scale lowered (Keras's LossScaleOptimizer).
      const bool skip = policy && policy->update(found_nonfinite);
      found_nonfinite = false;
      ramjet_update_args upd{sizeof(ramjet_update_args), RAMJET_ABI_VERSION, step + 1,
                             static_cast<float>(schedule->at(step) * lr_scale), scale};
      if (skip) ++skipped_updates;
      else program->optimizer_update(upd);
      ++step;
      micro = 0;
      if (cfg.checkpoint && cfg.checkpoint->every_steps > 0 && step % cfg.checkpoint->every_steps == 0) save();
    }
    const double step_s = seconds_since(step_start);
    train_s += step_s;
    epoch_train_s += step_s;
    samples += n;
    ++epoch_steps;
    progress.step(epoch, epoch_steps, steps_per_epoch, epoch_metrics, samples / std::max(1e-9, seconds_since(run_start)),
                  seconds_since(epoch_start));
    if (options.stop_after_steps >= 0 && step >= options.stop_after_steps) break;
  }
  if (!stopped_early && epoch_metrics.samples > 0 && options.stop_after_steps < 0) end_epoch(epoch);
  if (early && early->restore_best() && best_parameters) program->set_state("parameters", *best_parameters);
  const double wall = seconds_since(run_start);

  nlohmann::json report;
  auto& t = report["train"];
  t["precision"] = cfg.precision;
  t["strategy"] = cfg.strategy;
  t["replicas"] = world;
  if (policy) t["skipped_updates"] = skipped_updates;
  t["backend"] = cfg.backend;
  t["steps"] = step;
  t["epochs_run"] = history.size();
  t["wall_s"] = wall;
  t["samples_per_s"] = wall > 0 ? static_cast<double>(samples) / wall : 0.0;
  t["input_wait_fraction"] = wall > 0 ? train.input_wait_s() / wall : 0.0;
  t["final_loss"] = history.empty() ? epoch_metrics.loss() : history.back()["loss"].get<double>();
  if (!history.empty() && history.back().contains("accuracy")) t["final_accuracy"] = history.back()["accuracy"];
  t["history"] = history;
  t["stopped_early"] = stopped_early;
  t["parameters"] = graph.parameter_count;
  if (last_eval) report["eval"] = {{"loss", last_eval->loss()}, {"accuracy", last_eval->accuracy()}};
  if (early && early->restore_best() && best_parameters && has_eval) {
    const Metrics best = evaluate(manifest, registry, seed, *program, backend_name);
    report["eval"] = {{"loss", best.loss()}, {"accuracy", best.accuracy()}, {"restored_best_epoch", early->best_epoch() + 1}};
  }
  report["data"]["train"] = train.report();
  if (options.trained_parameters && rank == 0) *options.trained_parameters = program->get_state("parameters");
  if (progress_out) {
    char line[256];
    std::snprintf(line, sizeof line, "trained %lld steps in %.1f s, %.0f samples/s, input wait %.1f%%",
                  static_cast<long long>(step), wall, t["samples_per_s"].get<double>(),
                  100 * t["input_wait_fraction"].get<double>());
    *progress_out << line;
    if (report.contains("eval"))
      *progress_out << "; test accuracy " << Progress::fixed(report["eval"]["accuracy"]) << ", loss "
                    << Progress::fixed(report["eval"]["loss"]);
    *progress_out << "\n";
  }
  return report;
}

}  // namespace ramjet::core
