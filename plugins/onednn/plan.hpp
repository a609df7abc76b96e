// A graph compiled for one batch size: every value's buffers, every layer's primitives, the loss, and the copies
// to and from the host's tensors. Built once per batch size and reused; running it allocates nothing.
#pragma once

#include "layer.hpp"
#include "loss.hpp"
#include "norm_link.hpp"
#include "relayout.hpp"

#include <map>
#include <memory>
#include <set>

namespace onednn {

class Plan {
 public:
  // With `backward` (and a loss in the graph) the plan trains: forward keeps every value for backward, and
  // gradients share memory once read. Without, it only infers: a value's memory is reused once its last reader
  // ran, except the graph's outputs, the loss's input and `kept` (tapped values). The plan's per-step buffers go
  // to `arena` (shared with the program's other plans), which must outlive it.
  Plan(const Graph& graph, const CompileOptions& options, ParameterStore& params, const dnnl::engine& engine,
       int64_t batch, bool backward, Arena& arena, const std::vector<std::string>& kept);
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;

  int64_t batch() const { return batch_; }
  bool has_backward() const { return backward_; }
  // Bytes of the arena this plan's buffers span.
  size_t arena_bytes() const { return arena_bytes_; }
  // The nodes whose values this plan never makes, fused into their one reader's layer.
  const std::set<std::string>& fused_away() const { return absorbed_; }
  // The batch norms whose convolution does parts of their work on each chunk of the batch (norm_link.hpp).
  const std::vector<std::string>& norms_in_chunks() const { return norms_in_chunks_; }
  Loss* loss() { return loss_.get(); }

  // Copies the host's [N, ...] float32 tensor into graph input `index` (checked by the caller).
  void load_input(size_t index, const DLTensor& tensor);
  void forward(const Exec& exec);
  // Each graph output as a [N, ...] float32 tensor: reuses a matching tensor already in `outputs`.
  void write_outputs(const Exec& exec, ramjet::Example& outputs);
  // Back-propagates scale * loss (the loss forward must have run).
  void backward(const Exec& exec, float scale);

  // Taps: the named values, copied to the host's layout after each forward. A batch norm fused with its activation,
  // or a convolution with its pool, has no value of its own to tap: can_tap says whether this plan holds every
  // named value.
  bool can_tap(const std::vector<std::string>& names) const;
  void set_taps(const std::vector<std::string>& names);
  void run_taps(const Exec& exec, ramjet_tap_fn fn, void* user);

 private:
  struct Step {
    std::unique_ptr<Layer> layer;
    Value* output;
  };
  struct HostCopy {  // a value as a host tensor [N, ...]
    Value* value;
    Shape shape;        // with the batch
    dnnl::memory host;  // canonical layout; its handle is set to the host tensor before each copy
    Relayout copy;
  };
  Value& value(const std::string& name);
  HostCopy host_copy(Value& value, bool own_buffer);
  // The step after which each value's memory (inference) or gradient (training) is read no more.
  std::map<const Value*, size_t> last_reads(const Graph& graph, const std::vector<std::string>& kept);

  int64_t batch_;
  bool backward_;
  dnnl::engine engine_;
  std::vector<std::unique_ptr<Value>> values_;
  std::map<std::string, Value*> by_name_;
  std::vector<Value*> inputs_;
  std::vector<Step> steps_;
  std::unique_ptr<Loss> loss_;
  std::vector<HostCopy> outputs_;
  std::vector<std::unique_ptr<NormLink>> norm_links_;  // each convolution's with its batch norm
  std::vector<std::string> norms_in_chunks_;
  std::vector<std::pair<std::string, HostCopy>> taps_;
  std::set<std::string> absorbed_;  // batch norms fused with their activation, convolutions with their pool: their
                                    // output never exists alone
  dnnl::memory scratchpad_;
  std::vector<dnnl::memory> lane_scratchpads_;  // one per thread, for layers that run chunks of the batch
  size_t arena_bytes_ = 0;
};

}  // namespace onednn
