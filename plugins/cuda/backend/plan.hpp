// One batch size's compiled graph on the device: a value buffer per graph tensor, the layers in graph order, and
// the loss. A program keeps one plan per batch size it has seen (the training batch, a smaller last batch,
// evaluation's), all over the same parameters.
#pragma once

#include "layer.hpp"
#include "loss.hpp"
#include "step_graph.hpp"

#include <ramjet/sdk/example.hpp>
#include <ramjet/sdk/tensor.hpp>

#include <array>
#include <map>
#include <optional>

namespace cuda_plugin {

class Plan {
 public:
  // `backward`: keep gradients (a training plan); otherwise forward only.
  Plan(Device& device, Parameters& params, const ramjet::ir::Graph& graph, int64_t batch, cudaDataType_t dtype,
       bool backward);

  bool trains() const { return backward_; }
  void load_inputs(ramjet::Example& inputs);
  void forward(const Pass& pass);
  void write_outputs(ramjet::Example& outputs);
  // Hands each named value of the last forward to `fn` as a float32 host tensor (calibration, debugging); a
  // non-OK return stops there and is thrown with the tap's name.
  void run_taps(const std::vector<std::string>& names, ramjet_tap_fn fn, void* user);
  Loss* loss() { return loss_ ? &*loss_ : nullptr; }
  void backward(const Pass& pass, const ramjet_backward_args& args);

 private:
  Device& device_;
  Parameters& params_;
  const ramjet::ir::Graph& graph_;
  int64_t batch_;
  cudaDataType_t dtype_;
  bool backward_;
  std::vector<std::unique_ptr<Value>> values_;
  std::map<std::string, Value*> by_name_;
  std::vector<std::unique_ptr<Layer>> layers_;  // one per graph node, in order
  std::optional<Loss> loss_;
  // A value's elements as float32 on the host, waiting for the stream (`what` names it in a failure).
  ramjet::Tensor to_host(const Value& v, const std::string& what);
  // A batch of token IDs as the host handed them in.
  ramjet::Tensor ids_tensor(const Value& v) const;

  std::map<const Parameter*, int> users_;  // layers that deliver a part of each parameter's gradient
  Buffer staging_;  // float32 inputs and outputs on their way to and from float16 values

  // The layers cut into runs: a run of replayable layers (Layer::replayable) is replayed from CUDA graphs, one for
  // each way a pass can go (forward: training or not; backward: accumulating or not); the others run as they are.
  struct Run {
    size_t begin = 0, end = 0;  // layers_[begin, end)
    bool replayable = false;
    std::array<StepGraph, 2> forward, backward;
    std::array<std::string, 2> forward_what, backward_what;  // "training forward of layers 'c1' to 'fc' (batch 256)"
  };
  std::vector<std::unique_ptr<Run>> runs_;
  HostBookkeeping gradients_written_;  // which values' and parameters' gradients a backward has written
  void backward_layer(size_t i, const Pass& pass);

  // The float32 inputs' way in: copied into pinned memory by the host, then to the device on the copy stream,
  // which waits for the last pass that read the inputs (`inputs_read_`); the pass waits for `inputs_copied_`.
  // The pass's seed on the device (Build::step_seed), copied there before every pass from pinned memory.
  void write_step_seed(uint64_t seed);
  Buffer step_seed_;
  PinnedBuffer host_seed_{sizeof(uint64_t), "the step's seed"};
  Event seed_copied_{"the step's seed"};

  std::map<std::string, PinnedBuffer> pinned_;
  std::map<std::string, Buffer> wide_inputs_;  // mixed_float16: each input as float32 on the device, then halved
  Event inputs_copied_{"input copies"};
  Event inputs_read_{"input readers"};
};

}  // namespace cuda_plugin
