// What one forward or backward call carries down to the layers.
#pragma once

#include "common.hpp"
#include "parameters.hpp"

#include <array>

namespace onednn {

struct Exec {
  dnnl::stream& stream;
  bool training = false;
  uint64_t seed = 0;  // per-step seed (dropout)
  const ramjet_backward_args* backward = nullptr;  // set during backward

  // dnnl::primitive::execute copies the argument map into a new vector on every call; this passes them from the
  // stack, so a steady-state step allocates nothing.
  void run(const dnnl::primitive& primitive, const Args& args) const { run_on(stream, primitive, args); }
  // The same on another stream: a chunk of the batch on its thread's own (batch_chunks.hpp).
  static void run_on(dnnl::stream& stream, const dnnl::primitive& primitive, const Args& args) {
    constexpr size_t kMaxArgs = 32;  // a primitive takes a handful (sources, weights, results, scratchpad)
    if (args.size() > kMaxArgs) fail(RAMJET_ERR_INTERNAL, "a primitive was given more arguments than run_on passes");
    std::array<dnnl_exec_arg_t, kMaxArgs> c_args;
    int count = 0;
    for (const auto& [arg, memory] : args) c_args[static_cast<size_t>(count++)] = {arg, memory.get()};
    dnnl::error::wrap_c_api(dnnl_primitive_execute(primitive.get(), stream.get(), count, c_args.data()),
                            "could not execute a primitive");
  }

  // Add into the parameter's gradient rather than overwrite it: the host asked to accumulate, or another layer
  // sharing the parameter already wrote its part in this backward.
  bool accumulates(const Param& p) const { return (backward && backward->accumulate != 0) || p.written; }
  // Whether the host takes rows of p's gradient as they become final (grad_rows_ready, ABI version 3), asked by the
  // layer that delivers p's last part before it starts.
  bool reports_gradient_rows(const Param& p) const {
    return backward && backward->struct_size >= RAMJET_BACKWARD_ARGS_V3_SIZE && backward->grad_rows_ready &&
           p.pending == 1;
  }
  // Rows [0, rows) of p's gradient are final; only where reports_gradient_rows(p), before gradient_done(p).
  void gradient_rows_done(Param& p, int64_t rows) const {
    backward->grad_rows_ready(backward->grad_ready_user, p.name.c_str(), &p.grad_view.dl_tensor, rows);
  }
  // A layer delivered its part of p's gradient; the last one makes it final and tells the host.
  void gradient_done(Param& p) const {
    p.written = true;
    if (--p.pending == 0 && backward && backward->grad_ready)
      backward->grad_ready(backward->grad_ready_user, p.name.c_str(), &p.grad_view.dl_tensor);
  }
};

}  // namespace onednn
