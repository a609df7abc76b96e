// Learning-rate schedules, as pure functions of the optimizer step (0-based), configured from the manifest's
// train.schedule object: constant, step (decay by gamma every step_size steps, or piecewise by boundaries),
// cosine (linear warm-up then cosine decay to alpha × lr, as Keras's CosineDecay with warmup) and one_cycle
// (PyTorch's OneCycleLR with cosine annealing).
#pragma once

#include "ramjet/plan/train_config.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace ramjet::core {

class LrSchedule {
 public:
  virtual ~LrSchedule() = default;
  virtual double at(int64_t step) const = 0;
};

// `total_steps` is the run's optimizer steps (the cosine and one_cycle defaults). The plan reader has checked `spec`.
std::unique_ptr<LrSchedule> make_lr_schedule(const ScheduleConfig& spec, double learning_rate, int64_t total_steps);

}  // namespace ramjet::core
