// A compiled graph of the cuda backend: the parameters, one plan per batch size, and the training step's order
// (forward with labels, backward, optimizer update) as the ABI gives it.
#pragma once

#include "options.hpp"
#include "plan.hpp"

#include <ramjet/sdk/example.hpp>

#include <map>
#include <memory>

namespace cuda_plugin {

class Program {
 public:
  // `device` is the backend's and outlives the program (the host destroys programs before their backend).
  Program(Device& device, ramjet::ir::Graph graph, CompileOptions options);

  void forward(const ramjet_forward_args& args, ramjet::Example& inputs, ramjet::Example& outputs);
  void backward(const ramjet_backward_args& args);
  void optimizer_update(const ramjet_update_args& args);
  void get_state(std::string_view which, ramjet::Example& out);
  void set_state(std::string_view which, ramjet::Example& values);
  // Taps the named inputs or nodes on every later forward ("[]" clears); `fn` and `user` are kept until then.
  void set_taps(const std::vector<std::string>& names, ramjet_tap_fn fn, void* user);

 private:
  Plan& plan_for(int64_t batch, bool training);

  Device& device_;
  ramjet::ir::Graph graph_;
  CompileOptions options_;
  Parameters params_;
  std::map<std::pair<int64_t, bool>, std::unique_ptr<Plan>> plans_;  // (batch, trains)
  Plan* trained_ = nullptr;  // the plan of the last training forward, which backward continues
  uint64_t trained_seed_ = 0;
  std::vector<std::string> taps_;
  ramjet_tap_fn tap_fn_ = nullptr;
  void* tap_user_ = nullptr;
};

}  // namespace cuda_plugin
