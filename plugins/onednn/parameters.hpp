// The model's parameters and their gradients, kept in Keras's layouts (conv HWIO, dense [in, out], biases [n]) as
// plain float32 buffers. Layers read them through WeightsView (compute layouts) and write gradients through
// GradSink; the host sees exactly these buffers.
#pragma once

#include "common.hpp"

#include <map>
#include <memory>

namespace onednn {

struct Param {
  std::string name;
  Shape shape;
  dnnl::memory value;  // row-major, Keras layout
  dnnl::memory grad;   // same layout; the gradient of the last backward
  uint64_t version = 0;  // bumped on every change of `value`, so compute copies know when to refresh
  bool trainable = true;  // false: state a layer keeps itself (batch_norm's moving statistics), no gradient
  int users = 0;          // layers that deliver a part of its gradient (shared weights have several)

  // Backward bookkeeping: users still to deliver their part of the gradient, and whether one already has.
  int pending = 0;
  bool written = false;

  // A view of `grad` for grad_ready and get_state("gradients"): owned here, never deleted by the host (no deleter).
  DLManagedTensor grad_view{};

  float* data() const { return floats(value); }
  float* grad_data() const { return floats(grad); }
  size_t count() const { return static_cast<size_t>(product(shape)); }
};

class ParameterStore {
 public:
  // `model_order` names the parameters in the order the model uses them; their gradients are packed in the reverse
  // of it (those it leaves out after the rest).
  ParameterStore(const std::vector<std::pair<std::string, Shape>>& specs, const std::vector<std::string>& model_order,
                 const dnnl::engine& engine);
  ParameterStore(const ParameterStore&) = delete;
  ParameterStore& operator=(const ParameterStore&) = delete;

  Param* find(const std::string& name);
  Param& get(const std::string& name);
  const std::vector<std::unique_ptr<Param>>& all() const { return params_; }

 private:
  // Every Param::grad points into it; declared first, so it outlives them. Anonymous pages, zero until written: a
  // program whose gradients backward has not yet touched costs no resident memory for them (so the host's
  // transient copies of the initial weights never coincide with them).
  struct Unmap {
    size_t bytes;
    void operator()(float* p) const;
  };
  std::unique_ptr<float, Unmap> gradient_arena_;
  std::vector<std::unique_ptr<Param>> params_;
  std::map<std::string, Param*> by_name_;
};

// A DLTensor view of `count` floats at `data` with `shape` (which must outlive the view).
DLTensor float_view(float* data, const Shape& shape);

}  // namespace onednn
