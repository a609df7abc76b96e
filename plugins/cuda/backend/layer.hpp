// What a layer of the cuda backend is made of and how it is made: the values it reads and writes (device buffers
// for a batch, in the program's compute dtype, channels last), the parameters it binds, and the two passes it
// enqueues on the device's stream.
#pragma once

#include "device.hpp"
#include "parameters.hpp"

#include <ramjet/sdk/graph_ir.hpp>

#include <library_types.h>

#include <memory>
#include <string>
#include <vector>

namespace cuda_plugin {

using ramjet::ir::NodeSpec;

// A graph input or a node's output, for every example of the batch: [batch, shape...] in `dtype`.
struct Value {
  std::string name;
  Shape shape;  // per example
  int64_t elements = 0;  // batch × per example
  Buffer data;
  Buffer grad;   // d loss / d value, when wants_grad
  Buffer spare;  // a second reader's part of the gradient, before it is added into grad
  bool token_ids = false;   // int32 IDs (a graph input only embeddings read), whatever the compute dtype
  std::vector<int32_t> host_ids;  // token_ids: the batch's IDs as the host handed them in, for their checks
  bool wants_grad = false;  // a parameter lies upstream
  bool grad_written = false;  // a reader has delivered its part during this backward
};

// What a layer needs while it is made.
struct Build {
  Device& device;
  Parameters& params;
  int64_t batch;
  cudaDataType_t dtype;  // CUDA_R_32F, or CUDA_R_16F under mixed_float16
  bool backward;         // the plan trains: keep what backward reads
  std::vector<Value*> inputs;
  Value& output;
  const uint64_t* step_seed = nullptr;  // the pass's seed in device memory, written before each pass (dropout)

  // The single input's shape after checking there is one of the rank asked for (0: any rank).
  const Shape& only_input(const NodeSpec& node, size_t rank, const char* what) const;
  void check_output(const NodeSpec& node, const Shape& shape) const;
  size_t bytes(int64_t elements) const { return static_cast<size_t>(elements) * (dtype == CUDA_R_16F ? 2 : 4); }
  Buffer buffer(int64_t elements, const std::string& purpose) { return Buffer(device, bytes(elements), purpose); }
};

// What a pass needs at run time.
struct Pass {
  Device& device;
  bool training;
  uint64_t seed;  // the step's, for dropout (which reads it from Build::step_seed, so that graphs replay it)
};

class Layer {
 public:
  virtual ~Layer() = default;
  virtual void forward(const Pass& pass) = 0;
  // Reads output().grad; writes each input's gradient through give_gradient, each parameter's through
  // Parameters::grad_target/grad_commit.
  virtual void backward(const Pass& pass) = 0;
  // The parameters whose gradients this layer completes (for grad_ready).
  virtual std::vector<Parameter*> parameters() const { return {}; }
  // Whether both passes enqueue the same launches every step, with no work of the host's between them and nothing
  // the step changes (a seed, a batch's token IDs): then they are replayed from a CUDA graph (step_graph.hpp).
  virtual bool replayable() const { return true; }
};

// A weighted layer's parameters: its kernel, and its bias where it has one.
inline std::vector<Parameter*> kernel_and_bias(Parameter* kernel, Parameter* bias) {
  if (bias != nullptr) return {kernel, bias};
  return {kernel};
}

// A layer with one input: the device, the compute dtype and the two values it joins, taken from the build.
class OneInputLayer : public Layer {
 protected:
  explicit OneInputLayer(Build& b) : device_(b.device), dtype_(b.dtype), in_(*b.inputs.at(0)), out_(b.output) {}

  Device& device_;
  cudaDataType_t dtype_;
  Value& in_;
  Value& out_;
};

// Where a layer writes its part of `v`'s gradient, and, after it is written, the part added in (a value read by
// several layers collects theirs). Both enqueue on `device`'s stream.
void* gradient_slot(Value& v, Device& device, cudaDataType_t dtype, const std::string& purpose);
void gradient_written(Value& v, Device& device, cudaDataType_t dtype);

using LayerFactory = std::unique_ptr<Layer> (*)(const NodeSpec& node, Build& build);

// nullptr for an op this backend does not run.
LayerFactory find_layer(std::string_view op);
std::vector<std::string> supported_ops();

}  // namespace cuda_plugin
