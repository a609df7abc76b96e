// The int8 graph compiled for one batch size: u8 activation buffers, the steps that compute them, and the edges
// to the host (float32 in, quantized once; float32 out, dequantized). Built once per batch size; running it
// allocates nothing.
//
// Activations are int8 in the contract and u8 here: q_u8 = q_s8 + 128 is the same number line shifted, so a tensor
// with int8 zero point -128 (after relu, or an image in [0, 1]) is a u8 tensor with zero point 0, which oneDNN's
// VNNI kernels take without zero-point arithmetic.
#pragma once

#include "../graph.hpp"
#include "qparams.hpp"
#include "quant_table.hpp"

#include <map>
#include <memory>
#include <set>

namespace onednn::int8 {

struct QValue {
  std::string name;
  Shape shape;  // per example
  ActivationQuant quant;
  dnnl::memory mem;  // u8, in the layout its producer chose
};

// One unit of work in a forward. prepare() runs when the parameters changed (weights reordered, biases folded);
// run() every forward.
class QStep {
 public:
  virtual ~QStep() = default;
  virtual void prepare(const QParamStore&, dnnl::stream&) {}
  virtual void run(dnnl::stream& stream) = 0;
};

class QBuilder {
 public:
  QBuilder(const Graph& graph, const dnnl::engine& engine, int64_t batch, const QuantTable& quant,
           const QParamStore& params)
      : graph_(graph), engine_(engine), batch_(batch), quant_(quant), params_(params) {}

  const dnnl::engine& engine() const { return engine_; }
  int64_t batch() const { return batch_; }
  const QuantTable& quant() const { return quant_; }
  const QParamStore& params() const { return params_; }

  QValue& value(const std::string& name);
  // A new value with its own buffer in `desc`, or a view of `handle` (which must outlive the plan).
  QValue& define(const std::string& name, const Shape& shape, const ActivationQuant& quant, const md& desc,
                 void* handle = nullptr);
  // v's data in layout `want`: v.mem itself when it already is, else a copy a reorder step (added now, so it runs
  // before the caller's step) fills.
  dnnl::memory in_layout(QValue& v, const md& want);
  // v in the host's layout (nhwc for images, row-major otherwise).
  dnnl::memory canonical(QValue& v);

  void add(std::unique_ptr<QStep> step) { steps_.push_back(std::move(step)); }

  // Fusion: the node that alone reads `value` (null when none or several do, or the graph outputs it). A step
  // that computes that node too absorbs it, and the plan then skips the node's own factory.
  const NodeSpec* sole_reader(const std::string& value) const;
  void absorb(const NodeSpec& node) { absorbed_.insert(node.name); }
  bool absorbed(const NodeSpec& node) const { return absorbed_.count(node.name) != 0; }

  // Primitives share one scratchpad: they run one at a time.
  dnnl::primitive_attr attr() const;
  template <class PrimitiveDesc>
  void use_scratchpad(const PrimitiveDesc& pd, Args& args) {
    scratchpad_bytes_ = std::max(scratchpad_bytes_, pd.scratchpad_desc().get_size());
    scratchpad_users_.push_back(&args);
  }

  std::vector<std::unique_ptr<QValue>> take_values() { return std::move(values_); }
  std::vector<std::unique_ptr<QStep>> take_steps() { return std::move(steps_); }
  size_t scratchpad_bytes() const { return scratchpad_bytes_; }
  const std::vector<Args*>& scratchpad_users() const { return scratchpad_users_; }

 private:
  const Graph& graph_;
  dnnl::engine engine_;
  int64_t batch_;
  const QuantTable& quant_;
  const QParamStore& params_;
  std::vector<std::unique_ptr<QValue>> values_;
  std::map<std::string, QValue*> by_name_;
  std::vector<std::unique_ptr<QStep>> steps_;
  size_t scratchpad_bytes_ = 0;
  std::vector<Args*> scratchpad_users_;
  std::set<std::string> absorbed_;
};

// Builds one node: defines its output value and adds its steps.
using QLayerFactory = void (*)(const NodeSpec& node, QBuilder& builder);
QLayerFactory find_qlayer(const std::string& op);

// The data of the float32 output `name` of `shape` in `outputs`: the tensor already there when it is a contiguous
// CPU float32 tensor of that shape, else a new one put in its place.
float* output_rows(ramjet::Example& outputs, const std::string& name, const Shape& shape);
// The data of the float32 input `name` in `inputs`, as the program checked it: contiguous [N, ...].
const float* input_rows(ramjet::Example& inputs, const std::string& name);

class QPlan {
 public:
  QPlan(const Graph& graph, const QuantTable& quant, const QParamStore& params, const dnnl::engine& engine,
        int64_t batch);
  QPlan(const QPlan&) = delete;
  QPlan& operator=(const QPlan&) = delete;

  // Quantizes the inputs (checked by the caller), runs every step, writes each graph output as float32 [N, ...]
  // (reusing a matching tensor already in `outputs`). Refreshes weights first when the parameters changed.
  void forward(dnnl::stream& stream, const QParamStore& params, ramjet::Example& inputs, ramjet::Example& outputs);
  // The same on raw rows: `inputs[i]` holds the graph's i-th input and `outputs[i]` receives its i-th output, as
  // contiguous float32 [N, ...] with N this plan's batch (a slice of a larger batch: chunked_forward.hpp).
  void forward_rows(dnnl::stream& stream, const QParamStore& params, const std::vector<const float*>& inputs,
                    const std::vector<float*>& outputs);

  // The bytes one example takes in the plan's largest activation: what a chunk of examples keeps in cache.
  int64_t largest_value_bytes() const { return largest_value_bytes_; }
  // The shape of one example of the graph's i-th output.
  Shape example_output_shape(size_t i) const { return Shape(outputs_[i].shape.begin() + 1, outputs_[i].shape.end()); }

 private:
  struct HostInput {
    std::string name;
    Shape shape;  // with the batch
    dnnl::memory mem;  // u8 canonical
    ActivationQuant quant;
  };
  struct HostOutput {
    std::string name;
    Shape shape;  // with the batch
    dnnl::memory mem;  // u8 canonical
    ActivationQuant quant;
  };

  void refresh(dnnl::stream& stream, const QParamStore& params);

  std::vector<const float*> rows_in_;  // forward's pointers to the host tensors, kept so a call allocates nothing
  std::vector<float*> rows_out_;

  int64_t batch_;
  int64_t largest_value_bytes_ = 0;
  std::vector<HostInput> inputs_;
  std::vector<HostOutput> outputs_;
  std::vector<std::unique_ptr<QValue>> values_;
  std::vector<std::unique_ptr<QStep>> steps_;
  dnnl::memory scratchpad_;
  uint64_t prepared_version_ = 0;
};

}  // namespace onednn::int8
