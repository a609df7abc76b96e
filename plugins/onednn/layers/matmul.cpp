// matmul between two layer outputs: a [..., M, K] × b [..., K, N] → [..., M, N] with the leading axes equal (each
// example its own product), either input read transposed (transpose_a / transpose_b) through strides, never
// copied. Backward: d a' = d c × b'^T and d b' = a'^T × d c, where a' and b' are the inputs as multiplied; the results
// land in the inputs' own layouts through the same strided views.
#include "../edge.hpp"
#include "matmul_views.hpp"
#include "registry.hpp"

namespace onednn {
namespace {

// A batch of [rows, cols] matrices stored row-major, seen as [rows, cols] or transposed ([cols, rows]).
md matrices(int64_t batch, const Shape& shape, bool transposed, dt type) {
  dnnl::memory::dims dims{batch};
  dims.insert(dims.end(), shape.begin(), shape.end());
  auto strides = row_major_strides(dims);
  const size_t r = dims.size();
  if (transposed) {
    std::swap(dims[r - 2], dims[r - 1]);
    std::swap(strides[r - 2], strides[r - 1]);
  }
  return md(dims, type, strides);
}

class MatMulLayer : public Layer {
 public:
  MatMulLayer(const NodeSpec& node, LayerBuilder& b) {
    if (b.input_count() != 2) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "matmul takes exactly two inputs");
    const bool ta = node.attr_bool("transpose_a", false), tb = node.attr_bool("transpose_b", false);
    const Shape& sa = b.input(0).shape;
    const Shape& sb = b.input(1).shape;
    const size_t r = sa.size();
    if (r < 2 || sb.size() != r || !std::equal(sa.begin(), sa.end() - 2, sb.begin()))
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "matmul needs inputs of rank 2 or more with equal leading axes");
    const int64_t M = ta ? sa[r - 1] : sa[r - 2], K = ta ? sa[r - 2] : sa[r - 1];
    const int64_t K2 = tb ? sb[r - 1] : sb[r - 2], N = tb ? sb[r - 2] : sb[r - 1];
    if (K != K2) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "matmul's inner dimensions differ");
    Shape out = sa;
    out[r - 2] = M;
    out[r - 1] = N;
    b.check_shape(out);
    const dt type = b.compute_type();
    const dnnl::engine& e = b.engine();
    const int64_t n = b.batch();
    a_ = Edge(b, b.input(0), canonical_md(n, sa, type));
    b_ = Edge(b, b.input(1), canonical_md(n, sb, type));
    b.define_output(canonical_md(n, out, type));
    out_ = &b.output();
    const md a_view = matrices(n, sa, ta, type), b_view = matrices(n, sb, tb, type), c_view = matrices(n, out, false, type);
    fwd_ = MatMul(e, a_view, b_view, c_view);
    b.use_scratchpad(fwd_.pd, fwd_.args);
    a_mem_ = dnnl::memory(a_view, e, a_.mem().get_data_handle());
    b_mem_ = dnnl::memory(b_view, e, b_.mem().get_data_handle());
    c_mem_ = dnnl::memory(c_view, e, out_->mem.get_data_handle());
    if (!b.backward() || !out_->needs_grad) return;
    dc_ = dnnl::memory(c_view, e, out_->diff.get_data_handle());
    // The transposes of the views as multiplied: b'^T and a'^T.
    const md b_t = matrices(n, sb, !tb, type), a_t = matrices(n, sa, !ta, type);
    if (a_.needs_grad()) {
      grad_a_ = MatMul(e, c_view, b_t, a_view);
      b.use_scratchpad(grad_a_.pd, grad_a_.args);
      b_t_mem_ = dnnl::memory(b_t, e, b_.mem().get_data_handle());
      da_ = Alias(a_view, e);
    }
    if (b_.needs_grad()) {
      grad_b_ = MatMul(e, a_t, c_view, b_view);
      b.use_scratchpad(grad_b_.pd, grad_b_.args);
      a_t_mem_ = dnnl::memory(a_t, e, a_.mem().get_data_handle());
      db_ = Alias(b_view, e);
    }
  }

  void forward(const Exec& exec) override {
    a_.forward(exec);
    b_.forward(exec);
    fwd_.run(exec, a_mem_, b_mem_, c_mem_);
  }

  void backward(const Exec& exec) override {
    read_diff(*out_);
    if (a_.needs_grad()) {
      grad_a_.run(exec, dc_, b_t_mem_, da_.over(a_.begin_diff()));
      a_.end_diff(exec);
    }
    if (b_.needs_grad()) {
      grad_b_.run(exec, a_t_mem_, dc_, db_.over(b_.begin_diff()));
      b_.end_diff(exec);
    }
  }

 private:
  Edge a_, b_;
  Value* out_ = nullptr;
  MatMul fwd_, grad_a_, grad_b_;
  dnnl::memory a_mem_, b_mem_, c_mem_, dc_, a_t_mem_, b_t_mem_;
  Alias da_, db_;
};

}  // namespace

std::unique_ptr<Layer> make_matmul(const NodeSpec& node, LayerBuilder& builder) {
  return std::make_unique<MatMulLayer>(node, builder);
}

}  // namespace onednn
