// An inference-only int8 program compiled from a qgraph (docs/quantized-graph.md) with options
// {"precision": "int8", "batch": N, "threads": T}: set_state("parameters", qparams) hands it the int8 kernels and
// int32 biases, forward takes float32 inputs and returns every graph output dequantized to float32. One QPlan per
// batch size met (the compiled batch first), like the float program, for batches run whole; larger batches run in
// chunks of examples, one thread each, on ChunkedForward's plans.
#pragma once

#include "chunked_forward.hpp"
#include "qplan.hpp"

#include <map>
#include <memory>
#include <string_view>
#include <vector>

namespace onednn::int8 {

// True when compile options ask for this program.
bool wants_int8(const nlohmann::json& options);

class QuantizedProgram {
 public:
  // `batch` and `threads` from the compile options, read and checked by parse_options (options.hpp).
  // `pin`: the CPUs its calls pin their threads to (cpus_to_pin, thread_scope.hpp); empty: none.
  QuantizedProgram(const nlohmann::json& qgraph, int64_t batch, int threads, std::vector<int> pin = {});

  void forward(const ramjet_forward_args& args, ramjet::Example& inputs, ramjet::Example& outputs);
  [[noreturn]] void backward(const ramjet_backward_args& args);
  [[noreturn]] void optimizer_update(const ramjet_update_args& args);
  // "parameters": copies of the qparams; "buffers": none; the rest are training state it does not have.
  void get_state(std::string_view which, ramjet::Example& out);
  void set_state(std::string_view which, ramjet::Example& values);
  void set_taps(const std::vector<std::string>& names, ramjet_tap_fn fn, void* user);

 private:
  int64_t check_inputs(ramjet::Example& inputs) const;
  QPlan& plan_for(int64_t batch);

  Graph graph_;
  QuantTable quant_;
  QParamStore params_;
  int64_t batch_;
  int threads_;
  std::vector<int> pin_;
  dnnl::engine engine_;
  dnnl::stream stream_;
  std::map<int64_t, std::unique_ptr<QPlan>> plans_;
  ChunkedForward chunked_;  // batches cut into chunks of examples, each on one thread
  // What a chunked forward needs of every call, settled at compile time: per example, the largest activation's
  // bytes and each input's and output's floats; each output's shape, its first dimension set to the call's batch.
  int64_t largest_value_bytes_ = 0;
  std::vector<int64_t> input_sizes_, output_sizes_;
  std::vector<Shape> output_shapes_;
  std::vector<const float*> rows_in_;  // the host tensors' data, kept so a call allocates nothing
  std::vector<float*> rows_out_;
};

}  // namespace onednn::int8
