// One input of a layer, in the layout the layer's primitive wants. When that is the value's layout in other words
// (the same bytes, other dims: a sequence read as rows or as a one-row image) the edge only aliases the value and
// its gradient; when it really differs, forward reorders into a buffer of the edge and backward reorders the input
// gradient back (adding it in when another reader of the value already contributed).
#pragma once

#include "alias.hpp"
#include "layer.hpp"
#include "relayout.hpp"

namespace onednn {

class Edge {
 public:
  Edge() = default;
  Edge(LayerBuilder& builder, Value& value, const md& wanted);

  Value& value() const { return *value_; }
  bool needs_grad() const { return value_->needs_grad; }
  const dnnl::memory& mem() const { return mem_; }
  md desc() const { return mem_.get_desc(); }

  void forward(const Exec& exec) const { in_.run(exec); }
  // Where the layer writes d loss / d input (in the wanted layout); end_diff hands it to the value.
  dnnl::memory begin_diff();
  void end_diff(const Exec& exec);

 private:
  Value* value_ = nullptr;
  bool reordered_ = false;
  dnnl::memory mem_, diff_;
  Alias diff_alias_;  // the value's gradient (or scratch) through the wanted descriptor, when they only alias
  Relayout in_, diff_set_, diff_add_;
};

}  // namespace onednn
