// A compiled graph: the parameters and optimizer state it owns, and one Plan per batch size and kind it has met:
// training plans for training forwards with labels (the compiled batch first; a smaller last batch of an epoch
// gets its own once, then reuses it), inference plans for the rest (evaluation, prediction, calibration).
#pragma once

#include "optimizer.hpp"
#include "plan.hpp"
#include "thread_tuner.hpp"

#include <chrono>
#include <map>
#include <tuple>
#include <vector>
#include <memory>
#include <string_view>

namespace onednn {

class Program {
 public:
  // `threads` 0: OpenMP's default. `adapt_threads`: training steps may run on one thread (thread_tuner.hpp).
  // `pin`: the CPUs its calls pin their threads to (cpus_to_pin, thread_scope.hpp); empty: none.
  Program(Graph graph, CompileOptions options, int threads, bool adapt_threads = false, std::vector<int> pin = {});

  void forward(const ramjet_forward_args& args, ramjet::Example& inputs, ramjet::Example& outputs);
  void backward(const ramjet_backward_args& args);
  void optimizer_update(const ramjet_update_args& args);
  // "parameters" and "optimizer": copies in Keras layouts; "gradients": views of the gradient buffers (valid
  // until the program is destroyed; writing them in place, e.g. an all-reduce, changes what the optimizer
  // applies); "buffers": none yet (no batch_norm).
  void get_state(std::string_view which, ramjet::Example& out);
  void set_state(std::string_view which, ramjet::Example& values);
  void set_taps(const std::vector<std::string>& names, ramjet_tap_fn fn, void* user);

 private:
  int64_t check_inputs(ramjet::Example& inputs) const;
  // Plans are built under, and run with, the thread count they are for (oneDNN sizes its work split then).
  Plan& plan_for(int64_t batch, bool training, int threads);

  Graph graph_;
  CompileOptions options_;
  int threads_;
  std::vector<int> pin_;
  dnnl::engine engine_;
  dnnl::stream stream_;
  Arena arena_;  // before the plans: they place their buffers in it, so it must outlive them
  ParameterStore params_;
  std::unique_ptr<Optimizer> optimizer_;  // after the parameters are marked trainable or not
  ThreadTuner tuner_;
  std::map<std::tuple<int64_t, bool, int>, std::unique_ptr<Plan>> plans_;  // by batch, whether it trains, threads
  size_t arena_bytes_ = 0;  // the largest plan's span of the arena
  Plan* trained_ = nullptr;
  int trained_threads_ = 0;
  std::chrono::steady_clock::time_point step_start_;  // the last forward's start
  bool step_timed_ = false;                           // a training forward whose step the tuner has not seen  // the plan of the last training forward with labels: backward reads its buffers
  std::vector<std::string> taps_;
  ramjet_tap_fn tap_fn_ = nullptr;
  void* tap_user_ = nullptr;
};

}  // namespace onednn
