// What the layers built on oneDNN's matmul share (dense on sequences, matmul, multi_head_attention): a value seen as
// rows (every axis but the last folded into one), strided descriptors that read a buffer transposed or head by head
// without copying it, and one matmul primitive with its arguments.
#pragma once

#include "../alias.hpp"
#include "../common.hpp"
#include "../exec.hpp"
#include "../layout.hpp"

namespace onednn {

// Rows of a batch of values of per-example `shape`: the batch times every axis but the last.
inline int64_t row_count(int64_t batch, const Shape& shape) {
  int64_t rows = batch;
  for (size_t i = 0; i + 1 < shape.size(); ++i) rows *= shape[i];
  return rows;
}

inline md plain_md(const dnnl::memory::dims& dims, dt type) { return md(dims, type, row_major_strides(dims)); }

// A row-major [rows, cols] buffer read as its transpose [cols, rows].
inline md transposed_md(int64_t rows, int64_t cols, dt type) { return md({cols, rows}, type, {1, cols}); }


// One matmul primitive with its arguments: dst (=|+=) src × weights (+ bias), scaled by `scale`.
struct MatMul {
  dnnl::matmul primitive;
  Args args;

  MatMul() = default;
  MatMul(const dnnl::engine& engine, const md& src, const md& weights, const md& dst, const md& bias = md(),
         float scale = 1.0f, bool accumulate = false, const dnnl::post_ops* extra = nullptr) {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (scale != 1.0f) attr.set_output_scales(0, {scale});
    dnnl::post_ops ops = extra ? *extra : dnnl::post_ops();
    if (accumulate) ops.append_sum(1.0f);
    attr.set_post_ops(ops);
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weights, bias, dst), attr, engine);
    primitive = dnnl::matmul(pd);
  }
  void run(const Exec& exec, const dnnl::memory& src, const dnnl::memory& weights, const dnnl::memory& dst) {
    args[DNNL_ARG_SRC] = src;
    args[DNNL_ARG_WEIGHTS] = weights;
    args[DNNL_ARG_DST] = dst;
    exec.run(primitive, args);
  }
  dnnl::matmul::primitive_desc pd;
};

}  // namespace onednn
