#include "edge.hpp"

#include "layout.hpp"

namespace onednn {

Edge::Edge(LayerBuilder& builder, Value& value, const md& wanted) : value_(&value) {
  if (wanted == value.mem.get_desc()) {
    mem_ = value.mem;
    return;
  }
  if (same_bytes(value.mem.get_desc(), wanted)) {
    mem_ = dnnl::memory(wanted, builder.engine(), value.mem.get_data_handle());
    if (builder.backward() && value.needs_grad) diff_alias_ = Alias(wanted, builder.engine());
    return;
  }
  reordered_ = true;
  mem_ = builder.transient(wanted);
  in_ = Relayout(value.mem, mem_);
  if (builder.backward() && value.needs_grad) {
    diff_ = builder.transient_grad(wanted);
    diff_set_ = Relayout(diff_, value.diff);
    diff_add_ = Relayout(diff_, value.diff, /*accumulate=*/true);
  }
}

dnnl::memory Edge::begin_diff() {
  if (reordered_) return diff_;
  if (diff_alias_) return diff_alias_.over(onednn::begin_diff(*value_));
  return onednn::begin_diff(*value_);
}

void Edge::end_diff(const Exec& exec) {
  if (!reordered_) return onednn::end_diff(*value_);
  (value_->diff_written ? diff_add_ : diff_set_).run(exec);
  value_->diff_written = true;
}

}  // namespace onednn
