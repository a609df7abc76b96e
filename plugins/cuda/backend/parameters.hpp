// The model's parameters on the device, in Keras's layouts ([in, out] kernels, HWIO conv kernels, [n] vectors):
// float32 master values, their float32 gradients (in memory the host reads in place: get_state hands them out as
// views), and the optimizer's slots, all updated by one fused launch (MultiTensor). What a layer reads may differ:
// a compute copy in float16 (dense and convolution weights under mixed_float16) and, for a convolution's kernel, in cuDNN's
// NHWC filter layout [out, kh, kw, in]; it is refreshed whenever the values change, and a layer's gradient product in
// that form is converted back (or added) into the float32 Keras-layout gradient. So every state crosses the ABI as
// the cpu backend's does, and checkpoints move between the two.
#pragma once

#include "device.hpp"
#include "multi_tensor.hpp"

#include <ramjet/sdk/example.hpp>
#include <ramjet/sdk/graph_ir.hpp>
#include <ramjet/sdk/optimizer_options.hpp>

#include <dlpack/dlpack.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace cuda_plugin {

using ramjet::ir::Shape;

struct Parameter {
  std::string name;
  Shape shape;  // Keras's
  bool trainable = true;
  bool filter = false;  // a conv2d kernel: layers read it as cuDNN's filter [out, kh, kw, in]
  cudaDataType_t compute_dtype = CUDA_R_32F;  // what layers read and write its gradient in
  int64_t count = 0;

  Buffer value;               // float32
  SharedFloats grad;          // float32
  Buffer copy;                // the compute copy, when filter or float16
  Buffer scratch;             // a gradient product before it is converted or added into grad
  std::vector<Buffer> slots;  // the optimizer's
  DLManagedTensor grad_view{};  // what get_state("gradients") and grad_ready hand out (no deleter)

  bool written = false;  // this backward has delivered a part of the gradient
  int update_index = -1;  // a trainable one's place among the fused update's tensors
};

class Parameters {
 public:
  // Every parameter of the graph, zero until set_state. `half`: mixed_float16 (dense and conv2d weights computed in
  // float16). The conv2d kernels (named by the graph's conv2d nodes) are read in cuDNN's filter layout; so are
  // conv2d_transpose's [kh, kw, filters, in], which is HWIO of the convolution it transposes.
  Parameters(Device& device, const ramjet::ir::Graph& graph, bool half, const ramjet::OptimizerSpec& optimizer);
  Parameters(const Parameters&) = delete;
  Parameters& operator=(const Parameters&) = delete;

  Parameter& get(const std::string& name);
  const std::vector<std::unique_ptr<Parameter>>& all() const { return params_; }

  // What a layer reads: the float32 value or its compute copy.
  const void* compute(const Parameter& p) const;

  // Backward's bookkeeping: every gradient starts unwritten; a layer asks where to write its product (in the
  // parameter's compute dtype and layout) and then commits it, which converts or adds it into the float32 gradient.
  // A frozen (not trainable) parameter's product goes to scratch and its commit does nothing.
  void begin_backward(bool accumulate);
  void* grad_target(Parameter& p);
  void grad_commit(Parameter& p);
  // Trainable parameters no layer wrote get a zero gradient (unless accumulating).
  void end_backward();
  // Whether any gradient holds inf or NaN (waits for the device).
  bool gradients_nonfinite();
  // The same, gradient by gradient as each is handed over (grad_ready): clear the flag, enqueue the check of one
  // trainable parameter's gradient, and read the flag (waits for the device).
  void clear_nonfinite();
  void check_nonfinite(const Parameter& p);
  bool nonfinite_found();

  void update(const ramjet_update_args& args);

  // RAMJET_STATE_* "parameters", "gradients", "optimizer", "buffers" (none here).
  void get(std::string_view which, ramjet::Example& out);
  void set(std::string_view which, ramjet::Example& values);

 private:
  void refresh_copies();  // the compute copies from the master values
  std::vector<std::string> slot_names() const;

  Device& device_;
  ramjet::OptimizerSpec optimizer_;
  bool accumulate_ = false;
  std::vector<std::unique_ptr<Parameter>> params_;
  std::map<std::string, Parameter*> by_name_;
  std::unique_ptr<MultiTensor> multi_;
  Buffer nonfinite_flag_;
};

}  // namespace cuda_plugin
