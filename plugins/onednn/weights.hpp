// Parameters as primitives see them. WeightsView keeps a copy of a Keras-layout parameter in each layout a
// primitive asked for (none when the layouts agree) and refreshes it when the parameter changed. GradSink lands a
// primitive's weight gradient in the parameter's Keras-layout gradient, overwriting or adding.
#pragma once

#include "layer.hpp"
#include "relayout.hpp"

namespace onednn {

class WeightsView {
 public:
  WeightsView() = default;
  // `keras_view` describes the parameter's Keras buffer in the primitive's logical dims (via strides).
  WeightsView(const LayerBuilder& builder, Param& param, const md& keras_view);

  // Build time: memory in the layout a primitive wants.
  dnnl::memory compute(const md& wanted);
  // Run time: bring every copy up to date with the parameter.
  void refresh(const Exec& exec);
  Param& param() const { return *param_; }
  const md& keras_view() const { return keras_view_; }

 private:
  Param* param_ = nullptr;
  md keras_view_;
  dnnl::memory keras_;
  std::vector<std::pair<dnnl::memory, Relayout>> copies_;
  uint64_t seen_ = ~uint64_t{0};
};

class GradSink {
 public:
  GradSink() = default;
  GradSink(const LayerBuilder& builder, Param& param, const md& keras_view, const md& computed);

  explicit operator bool() const { return param_ != nullptr; }
  // Where the primitive writes d loss / d param: the parameter's gradient itself when the layouts agree and
  // nothing must be added, else a buffer of the sink.
  dnnl::memory target(const Exec& exec);
  // Lands the gradient and reports the parameter's part done (grad_ready fires after the last part).
  void commit(const Exec& exec);

 private:
  Param* param_ = nullptr;
  dnnl::memory keras_, own_;
  Relayout set_, add_;
  bool direct_ = false;
};

}  // namespace onednn
