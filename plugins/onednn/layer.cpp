#include "layer.hpp"

#include "layout.hpp"
#include "parameters.hpp"

namespace onednn {

void LayerBuilder::require_rank(size_t rank, const char* what) const {
  for (const Value* v : inputs_)
    if (v->shape.size() != rank)
      node_->fail(RAMJET_ERR_INVALID_ARGUMENT, "input '" + v->name + "' has shape " + shape_string(v->shape) + "; " +
                                                   node_->op + " needs " + what);
}

void LayerBuilder::check_shape(const Shape& computed) const {
  if (computed != node_->shape)
    node_->fail(RAMJET_ERR_INVALID_ARGUMENT, "declared shape " + shape_string(node_->shape) + " but the op produces " +
                                                 shape_string(computed));
}

md LayerBuilder::compute_desc(const Value& value) const { return with_type(value.mem.get_desc(), compute_type()); }

void LayerBuilder::set_output(const dnnl::memory& mem, void* diff_alias) {
  Value& v = *output_;
  v.mem = mem;
  if (!backward_ || !v.needs_grad) return;
  const md desc = mem.get_desc();
  v.diff = diff_alias ? dnnl::memory(desc, engine_, diff_alias) : transient_grad(desc);
  if (v.consumers > 1) v.diff_scratch = transient_grad(desc);
}

Param& LayerBuilder::param(const char* role, const Shape& keras_shape) {
  Param& p = params_.get(node_->param(role));
  if (p.shape != keras_shape)
    node_->fail(RAMJET_ERR_INVALID_ARGUMENT, std::string("parameter '") + p.name + "' (" + role + ") has shape " +
                                                 shape_string(p.shape) + "; the op needs " + shape_string(keras_shape));
  return p;
}

dnnl::primitive_attr LayerBuilder::attr() const {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

void LayerBuilder::use_scratchpad(const dnnl::primitive_desc_base& pd, Args& args) {
  scratchpad_bytes_ = std::max(scratchpad_bytes_, pd.scratchpad_desc().get_size());
  scratchpad_users_.push_back(&args);
}

void LayerBuilder::use_lane_scratchpad(const dnnl::primitive_desc_base& pd, Args& args, int lane) {
  lane_scratchpad_bytes_ = std::max(lane_scratchpad_bytes_, pd.scratchpad_desc().get_size());
  lane_scratchpad_users_.emplace_back(&args, lane);
}

}  // namespace onednn
