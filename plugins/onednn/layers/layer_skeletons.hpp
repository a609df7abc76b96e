// The two run-time shapes most layers share, so each layer file only builds its primitives:
//   ElementwiseLayer — one primitive forward, one backward from d output to d input (activation, softmax);
//   WeightedLayer    — a kernel (and bias) with a fused activation: forward, backward weights, backward data
//                      (conv2d, dense).
#pragma once

#include "../edge.hpp"
#include "../weights.hpp"
#include "activation.hpp"
#include "registry.hpp"

namespace onednn {

class ElementwiseLayer : public Layer {
 public:
  void forward(const Exec& exec) override {
    in_.forward(exec);
    exec.run(fwd_, fwd_args_);
  }

  void backward(const Exec& exec) override {
    if (!in_.needs_grad()) return;
    bwd_args_[DNNL_ARG_DIFF_DST] = read_diff(*out_);
    bwd_args_[DNNL_ARG_DIFF_SRC] = in_.begin_diff();
    exec.run(bwd_, bwd_args_);
    in_.end_diff(exec);
  }

 protected:
  Edge in_;
  Value* out_ = nullptr;
  dnnl::primitive fwd_, bwd_;
  Args fwd_args_, bwd_args_;
};

class WeightedLayer : public Layer {
 public:
  void forward(const Exec& exec) override {
    in_.forward(exec);
    kernel_.refresh(exec);
    exec.run(fwd_, fwd_args_);
    act_.forward(exec);
  }

  void backward(const Exec& exec) override {
    read_diff(*out_);
    const dnnl::memory& diff = act_.backward(exec, out_diff_view_ ? out_diff_view_.mem() : out_->diff);
    if (!own_weight_gradients(exec, diff)) backward_weights(exec, diff);

    if (!in_.needs_grad()) return;  // e.g. the first layer: no one wants d loss / d image
    kernel_.refresh(exec);
    bwd_data_args_[DNNL_ARG_DIFF_DST] = diff;
    bwd_data_args_[DNNL_ARG_DIFF_SRC] = in_.begin_diff();
    exec.run(bwd_data_, bwd_data_args_);
    in_.end_diff(exec);
  }

 protected:
  // A layer that computes its weight gradients itself here returns true (dense in row blocks, telling the host as
  // each block is final, where the host asks for rows; conv2d's bf16 weight gradient as AMX matmuls where oneDNN's
  // kernels are slow); false leaves them to the backward-weights primitive.
  virtual bool own_weight_gradients(const Exec& /*exec*/, const dnnl::memory& /*diff*/) { return false; }

  void backward_weights(const Exec& exec, const dnnl::memory& diff) {
    if (bwd_weights_diff_) {
      bwd_weights_diff_args_[DNNL_ARG_FROM] = diff;  // the map keeps its two entries: nothing allocated per step
      bwd_weights_diff_args_[DNNL_ARG_TO] = bwd_weights_diff_;
      exec.run(bwd_weights_diff_reorder_, bwd_weights_diff_args_);
      bwd_weights_args_[DNNL_ARG_DIFF_DST] = bwd_weights_diff_;
    } else {
      bwd_weights_args_[DNNL_ARG_DIFF_DST] = diff;
    }
    bwd_weights_args_[DNNL_ARG_DIFF_WEIGHTS] = kernel_grad_.target(exec);
    if (bias_grad_) bwd_weights_args_[DNNL_ARG_DIFF_BIAS] = bias_grad_.target(exec);
    bwd_weights_src_.run(exec);
    exec.run(bwd_weights_, bwd_weights_args_);
    kernel_grad_.commit(exec);
    if (bias_grad_) bias_grad_.commit(exec);
  }

  Edge in_;
  Value* out_ = nullptr;
  Alias out_diff_view_;  // the output's gradient as the primitives see it, when that is another view of it
  PostActivation act_;
  WeightsView kernel_;
  GradSink kernel_grad_, bias_grad_;
  // The input in the backward-weights primitive's layout, when that differs from the forward's (conv2d only).
  Relayout bwd_weights_src_;
  // The output's gradient converted for a backward-weights primitive that runs in another data type (conv2d in
  // bf16 on shapes where float32 is faster), filled from the gradient in every backward; empty otherwise.
  dnnl::memory bwd_weights_diff_;
  dnnl::reorder bwd_weights_diff_reorder_;
  Args bwd_weights_diff_args_;
  dnnl::primitive fwd_, bwd_weights_, bwd_data_;
  Args fwd_args_, bwd_weights_args_, bwd_data_args_;
};

}  // namespace onednn
