// The manifest's `train` section, typed. The plan reader (plan.hpp) fills it; every default lives here.
// Component words stay with their components: the backend, the precision policy and the strategy receive their
// configuration objects as written and judge them themselves (check_config / check_options).
#pragma once

#include "ramjet/plugin/components.hpp"
#include "ramjet/plugin/location.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ramjet::core {

struct CheckpointConfig {
  std::filesystem::path dir;  // resolved against the manifest's folder
  int64_t every_steps = 0;    // 0: only at the end of each epoch
  int64_t keep = 3;           // newest checkpoints kept
};

// A learning-rate schedule as a pure function of the optimizer step (lr_schedule.hpp builds it).
struct ScheduleConfig {
  std::string type = "constant";  // constant, step, cosine, one_cycle
  // step: decay by gamma every step_size steps, or piecewise constant when boundaries are given
  int64_t step_size = 0;
  double gamma = 0.1;
  std::vector<int64_t> boundaries;
  std::vector<double> values;  // one more than boundaries
  // cosine: linear warm-up then cosine decay to alpha × lr over decay_steps (default: the rest of the run)
  int64_t warmup_steps = 0;
  std::optional<int64_t> decay_steps;
  double alpha = 0.0;
  // one_cycle (PyTorch's OneCycleLR): total_steps defaults to the run's, max_lr to the optimizer's
  std::optional<int64_t> total_steps;
  std::optional<double> max_lr;
  double pct_start = 0.3, div_factor = 25.0, final_div_factor = 1e4;
};

// What a plateau or early-stopping callback watches.
struct MonitorConfig {
  std::string metric = "val_loss";  // val_loss, val_accuracy, loss, accuracy
  double min_delta = 0.0;
};

struct ReduceLrOnPlateauConfig {
  MonitorConfig monitor{"val_loss", 1e-4};
  double factor = 0.1;
  int64_t patience = 10;
  int64_t cooldown = 0;
  double min_lr = 0.0;
};

struct EarlyStoppingConfig {
  MonitorConfig monitor{"val_loss", 0.0};
  int64_t patience = 3;
  bool restore_best_weights = false;
};

// Reads a `schedule` object (at `pointer`) on its own; nothing and the problems when it is wrong. The train
// section's reader uses it; so may a test.
std::optional<ScheduleConfig> read_schedule(const nlohmann::json& schedule, const std::string& pointer,
                                            std::vector<Problem>& problems);

struct TrainConfig {
  ComponentSpec backend{{{"type", "cpu"}}, "/train/backend"};
  // Absent: float32 everywhere, no loss scaling (no component). Else a precision_policy component.
  std::optional<ComponentSpec> precision;
  // Absent: the built-in single process. Else a strategy component.
  std::optional<ComponentSpec> strategy;
  // train.strategy.bucket_mb: the trainer's word inside the strategy object (as DDP's bucket_cap_mb sits beside its
  // process group), read here and never passed to the plugin. Gradients are all-reduced in buckets of about this
  // many MiB, the first capped at 1 MiB so that communication starts early in backward.
  double bucket_mb = 25;
  // Passed to the backend as written ("type" and the optimizer's own fields); the backend judges it.
  nlohmann::json optimizer = {{"type", "adam"}};
  // The base learning rate schedules scale; the core owns it because it computes each step's rate.
  double learning_rate = 1e-3;
  int64_t epochs = 1;
  ScheduleConfig schedule;
  double clip_norm = 0;     // 0: no clipping
  int64_t accumulate = 1;   // micro-batches per optimizer step
  std::optional<ReduceLrOnPlateauConfig> reduce_lr_on_plateau;
  std::optional<EarlyStoppingConfig> early_stopping;
  std::optional<CheckpointConfig> checkpoint;
  // TensorBoard event files go to train/ and validation/ under it; resolved against the manifest's folder.
  std::optional<std::filesystem::path> tensorboard;
  int64_t threads = 0;      // backend threads; 0: its default

  std::string precision_name() const { return precision ? precision->type() : "float32"; }
  std::string strategy_name() const { return strategy ? strategy->type() : "single"; }
};

}  // namespace ramjet::core
