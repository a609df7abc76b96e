#include "weights.hpp"

namespace onednn {

WeightsView::WeightsView(const LayerBuilder& builder, Param& param, const md& keras_view)
    : param_(&param), keras_view_(keras_view), keras_(keras_view, builder.engine(), param.value.get_data_handle()) {}

dnnl::memory WeightsView::compute(const md& wanted) {
  if (wanted == keras_view_) return keras_;
  for (const auto& [mem, relayout] : copies_)
    if (mem.get_desc() == wanted) return mem;
  dnnl::memory mem(wanted, keras_.get_engine());
  copies_.emplace_back(mem, Relayout(keras_, mem));
  return mem;
}

void WeightsView::refresh(const Exec& exec) {
  if (seen_ == param_->version) return;
  for (const auto& [mem, relayout] : copies_) relayout.run(exec);
  seen_ = param_->version;
}

GradSink::GradSink(const LayerBuilder& builder, Param& param, const md& keras_view, const md& computed)
    : param_(&param), keras_(keras_view, builder.engine(), param.grad.get_data_handle()),
      own_(computed, builder.engine()), set_(own_, keras_), add_(own_, keras_, /*accumulate=*/true) {}

dnnl::memory GradSink::target(const Exec& exec) {
  direct_ = own_.get_desc() == keras_.get_desc() && !exec.accumulates(*param_);
  return direct_ ? keras_ : own_;
}

void GradSink::commit(const Exec& exec) {
  if (!direct_) (exec.accumulates(*param_) ? add_ : set_).run(exec);
  exec.gradient_done(*param_);
}

}  // namespace onednn
