// A layer: one graph node compiled for one batch size, with its forward and backward side by side.
#pragma once

#include "exec.hpp"
#include "graph.hpp"
#include "options.hpp"
#include "arena.hpp"
#include "value.hpp"

#include <omp.h>

#include <memory>

namespace onednn {

class Layer {
 public:
  virtual ~Layer() = default;
  virtual void forward(const Exec& exec) = 0;
  // d loss / d output is ready (read_diff(output)); produce the parameters' gradients and, for inputs that need
  // one, d loss / d input. Called only in plans built with backward, for outputs that need a gradient.
  virtual void backward(const Exec& exec) = 0;
};

// What a layer sees while it is built: the node, its input and output values, the parameters, and the plan's
// shared scratchpad.
class LayerBuilder {
 public:
  LayerBuilder(const dnnl::engine& engine, int64_t batch, const CompileOptions& options, bool backward,
               class ParameterStore& params, ArenaCursor& arena)
      : engine_(engine), batch_(batch), options_(options), backward_(backward), params_(params), arena_(arena),
        threads_(omp_get_max_threads()) {}

  const dnnl::engine& engine() const { return engine_; }
  int64_t batch() const { return batch_; }
  // The threads the plan is built for and runs on (its ThreadScope's).
  int threads() const { return threads_; }
  dt compute_type() const { return options_.compute_type(); }
  // A value's descriptor in the compute type: its layout, read by a layer that takes whatever layout it gets (the
  // edge converts a float32 graph input or softmax output to bf16).
  md compute_desc(const Value& value) const;
  // Build backward primitives (the graph has a loss).
  bool backward() const { return backward_; }
  // Forward primitives' propagation kind.
  dnnl::prop_kind forward_kind() const {
    return backward_ ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  }

  const NodeSpec& node() const { return *node_; }
  size_t input_count() const { return inputs_.size(); }
  Value& input(size_t i) const { return *inputs_.at(i); }
  Value& output() const { return *output_; }
  // Every input must have `rank` dims per example.
  void require_rank(size_t rank, const char* what) const;
  // The node's declared shape must equal what the op computes.
  void check_shape(const Shape& computed) const;

  // Makes `mem` the output's data and allocates its gradient buffers; with `diff_alias` the gradient shares that
  // buffer (a reshape's output gradient is its input's).
  void set_output(const dnnl::memory& mem, void* diff_alias = nullptr);
  void define_output(const md& desc) { set_output(transient(desc)); }
  // Buffers whose contents matter only within one step (written before they are read in every step that reads
  // them): placed in the program's arena, shared with its other plans and, once the plan knows nothing reads
  // them again, with this plan's later buffers. Anything that must survive from one step to the next (a constant
  // filled at build time, a cached copy of weights) is its own dnnl::memory instead.
  // What forward writes: an inference plan reuses it after the step (or the value's last reader); a training
  // plan keeps it for backward.
  dnnl::memory transient(const md& desc) { return arena_.place(desc, ArenaCursor::Side::forward); }
  // What backward writes (a gradient, a buffer a backward primitive fills): reused once the gradient is read.
  dnnl::memory transient_grad(const md& desc) { return arena_.place(desc, ArenaCursor::Side::backward); }

  // The parameter bound to `role`, checked against the shape the op needs (Keras layout).
  Param& param(const char* role, const Shape& keras_shape);

  // Primitive attributes with a user-managed scratchpad; register every primitive built with them.
  dnnl::primitive_attr attr() const;
  void use_scratchpad(const dnnl::primitive_desc_base& pd, Args& args);
  // The same for a primitive that runs on thread `lane` (below threads()) while the others run theirs: each lane
  // has a scratchpad of its own.
  void use_lane_scratchpad(const dnnl::primitive_desc_base& pd, Args& args, int lane);

  // For the plan.
  // With a `fused_activation` the node's one reader, an activation of that name, is done by this layer too:
  // `output` is the activation's value.
  // With a `fused_pool` the node (a conv2d) and its one reader, that max_pool, are one layer: `output` is the
  // pool's value.
  void begin_node(const NodeSpec& node, std::vector<Value*> inputs, Value& output, std::string fused_activation = {},
                  const NodeSpec* fused_pool = nullptr) {
    node_ = &node;
    inputs_ = std::move(inputs);
    output_ = &output;
    fused_activation_ = std::move(fused_activation);
    fused_pool_ = fused_pool;
    norm_link_ = nullptr;
  }
  // After begin_node, for a conv2d whose one reader is a batch norm, and for that batch norm: the link between the
  // two (norm_link.hpp), which the plan owns.
  void link_norm(struct NormLink* link) { norm_link_ = link; }
  // The activation the layer must apply to its output, or "" (only a batch_norm or a two-input add is asked to, and
  // only for relu and relu6: Plan's activation_pairs).
  const std::string& fused_activation() const { return fused_activation_; }
  // The max_pool the layer must apply to its output, or null (only a conv2d is asked to: Plan's
  // conv_max_pool_pairs).
  const NodeSpec* fused_pool() const { return fused_pool_; }
  // The link to this conv2d's batch norm, or to this batch norm's conv2d, or null.
  struct NormLink* norm_link() const { return norm_link_; }
  size_t scratchpad_bytes() const { return scratchpad_bytes_; }
  const std::vector<Args*>& scratchpad_users() const { return scratchpad_users_; }
  size_t lane_scratchpad_bytes() const { return lane_scratchpad_bytes_; }
  const std::vector<std::pair<Args*, int>>& lane_scratchpad_users() const { return lane_scratchpad_users_; }

 private:
  const dnnl::engine& engine_;
  int64_t batch_;
  const CompileOptions& options_;
  bool backward_;
  class ParameterStore& params_;
  ArenaCursor& arena_;
  const NodeSpec* node_ = nullptr;
  std::vector<Value*> inputs_;
  Value* output_ = nullptr;
  std::string fused_activation_;
  const NodeSpec* fused_pool_ = nullptr;
  struct NormLink* norm_link_ = nullptr;
  int threads_;
  size_t scratchpad_bytes_ = 0;
  std::vector<Args*> scratchpad_users_;
  size_t lane_scratchpad_bytes_ = 0;
  std::vector<std::pair<Args*, int>> lane_scratchpad_users_;
};

}  // namespace onednn
