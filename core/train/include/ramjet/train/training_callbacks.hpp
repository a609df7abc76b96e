// Per-epoch decisions Keras users know: ReduceLROnPlateau (scale the learning rate down when a metric stops
// improving) and EarlyStopping (stop after `patience` epochs without improvement, optionally going back to the
// best weights). Pure state machines over the monitored values, so the trainer only feeds them numbers.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace ramjet::core {

struct Monitor {
  std::string metric = "val_loss";  // val_loss, val_accuracy, loss, accuracy
  bool maximize = false;            // accuracies are maximised, losses minimised
  double min_delta = 0;
  // Is `value` better than `best` by more than min_delta?
  bool improves(double value, double best) const {
    return maximize ? value > best + min_delta : value < best - min_delta;
  }
  static Monitor of(const std::string& metric, double min_delta);
};

class ReduceLrOnPlateau {
 public:
  ReduceLrOnPlateau(Monitor monitor, double factor, int64_t patience, int64_t cooldown, double min_lr)
      : monitor_(monitor), factor_(factor), patience_(patience), cooldown_(cooldown), min_lr_(min_lr) {}
  // After an epoch: returns the learning rate to use from now on.
  double update(double value, double lr);
  const Monitor& monitor() const { return monitor_; }
  // For checkpoints: the counters, so a resumed run decides as the uninterrupted one would.
  nlohmann::json state() const { return {{"have_best", have_best_}, {"best", best_}, {"wait", wait_}, {"cooldown", cooldown_left_}}; }
  void restore(const nlohmann::json& s) {
    have_best_ = s.at("have_best");
    best_ = s.at("best");
    wait_ = s.at("wait");
    cooldown_left_ = s.at("cooldown");
  }

 private:
  Monitor monitor_;
  double factor_;
  int64_t patience_, cooldown_;
  double min_lr_;
  bool have_best_ = false;
  double best_ = 0;
  int64_t wait_ = 0, cooldown_left_ = 0;
};

class EarlyStopping {
 public:
  EarlyStopping(Monitor monitor, int64_t patience, bool restore_best)
      : monitor_(monitor), patience_(patience), restore_best_(restore_best) {}
  // After an epoch. Sets improved() when this epoch is the best so far (the trainer keeps its weights).
  void update(int64_t epoch, double value);
  bool improved() const { return improved_; }
  bool should_stop() const { return wait_ >= patience_; }
  bool restore_best() const { return restore_best_; }
  int64_t best_epoch() const { return best_epoch_; }
  double best() const { return best_; }
  const Monitor& monitor() const { return monitor_; }
  nlohmann::json state() const {
    return {{"have_best", have_best_}, {"best", best_}, {"best_epoch", best_epoch_}, {"wait", wait_}};
  }
  void restore(const nlohmann::json& s) {
    have_best_ = s.at("have_best");
    best_ = s.at("best");
    best_epoch_ = s.at("best_epoch");
    wait_ = s.at("wait");
  }

 private:
  Monitor monitor_;
  int64_t patience_;
  bool restore_best_;
  bool have_best_ = false, improved_ = false;
  double best_ = 0;
  int64_t best_epoch_ = -1, wait_ = 0;
};

}  // namespace ramjet::core
