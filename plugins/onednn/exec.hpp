// What one forward or backward call carries down to the layers.
#pragma once

#include "common.hpp"
#include "parameters.hpp"

namespace onednn {

struct Exec {
  dnnl::stream& stream;
  bool training = false;
  uint64_t seed = 0;  // per-step seed (dropout)
  const ramjet_backward_args* backward = nullptr;  // set during backward

  void run(const dnnl::primitive& primitive, const Args& args) const { primitive.execute(stream, args); }

  // Add into the parameter's gradient rather than overwrite it: the host asked to accumulate, or another layer
  // sharing the parameter already wrote its part in this backward.
  bool accumulates(const Param& p) const { return (backward && backward->accumulate != 0) || p.written; }
  // A layer delivered its part of p's gradient; the last one makes it final and tells the host.
  void gradient_done(Param& p) const {
    p.written = true;
    if (--p.pending == 0 && backward && backward->grad_ready)
      backward->grad_ready(backward->grad_ready_user, p.name.c_str(), &p.grad_view.dl_tensor);
  }
};

}  // namespace onednn
