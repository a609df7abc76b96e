// transpose: permutes the per-example axes ("perm": for each output axis, the input axis it takes). One reorder
// reads the input through strides in the output's axis order; backward reads the output's gradient the same way
// back.
#include "../edge.hpp"
#include "../relayout.hpp"
#include "matmul_views.hpp"
#include "registry.hpp"

namespace onednn {
namespace {

class Transpose : public Layer {
 public:
  Transpose(const NodeSpec& node, LayerBuilder& b) {
    if (b.input_count() != 1) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "transpose takes one input");
    const Shape& in = b.input(0).shape;
    const auto perm_attr = node.attrs.find("perm");
    if (perm_attr == node.attrs.end() || !perm_attr->is_array() || perm_attr->size() != in.size())
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "attribute 'perm' must list each of the input's axes once");
    std::vector<bool> seen(in.size(), false);
    Shape out;
    std::vector<size_t> perm;
    for (const auto& a : *perm_attr) {
      if (!a.is_number_integer() || a.get<int64_t>() < 0 || a.get<int64_t>() >= static_cast<int64_t>(in.size()) ||
          seen[a.get<size_t>()])
        node.fail(RAMJET_ERR_INVALID_ARGUMENT, "attribute 'perm' must be a permutation of the input's axes");
      seen[a.get<size_t>()] = true;
      perm.push_back(a.get<size_t>());
      out.push_back(in[a.get<size_t>()]);
    }
    b.check_shape(out);
    const dt type = b.compute_type();
    const dnnl::engine& e = b.engine();
    const md in_desc = canonical_md(b.batch(), in, type), out_desc = canonical_md(b.batch(), out, type);
    in_ = Edge(b, b.input(0), in_desc);
    b.define_output(out_desc);
    out_ = &b.output();
    // The input seen in the output's axis order: output axis k walks the input's axis perm[k].
    const auto in_strides = row_major_strides(batch_dims_of(b.batch(), in));
    dnnl::memory::dims dims{b.batch()}, strides{in_strides[0]};
    for (size_t k = 0; k < perm.size(); ++k) {
      dims.push_back(out[k]);
      strides.push_back(in_strides[perm[k] + 1]);
    }
    const md in_as_out(dims, type, strides);
    forward_ = Relayout(dnnl::memory(in_as_out, e, in_.mem().get_data_handle()),
                        dnnl::memory(plain_md(dims, type), e, out_->mem.get_data_handle()));
    if (!b.backward() || !in_.needs_grad()) return;
    diff_in_ = Alias(in_as_out, e);
    diff_out_ = dnnl::memory(plain_md(dims, type), e, out_->diff.get_data_handle());
    const dnnl::reorder::primitive_desc set(e, plain_md(dims, type), e, in_as_out);
    backward_ = dnnl::reorder(set);
  }

  void forward(const Exec& exec) override {
    in_.forward(exec);
    forward_.run(exec);
  }

  void backward(const Exec& exec) override {
    read_diff(*out_);
    // Every element of the input's gradient is written, so a reorder (not an add) is right even when the value
    // has other readers: Edge adds the scratch in.
    backward_args_[DNNL_ARG_FROM] = diff_out_;
    backward_args_[DNNL_ARG_TO] = diff_in_.over(in_.begin_diff());
    exec.run(backward_, backward_args_);
    in_.end_diff(exec);
  }

 private:
  // The plain dims of a batch of `shape` (the row-major order the host uses, images included).
  static dnnl::memory::dims batch_dims_of(int64_t n, const Shape& shape) {
    dnnl::memory::dims dims{n};
    dims.insert(dims.end(), shape.begin(), shape.end());
    return dims;
  }

  Edge in_;
  Value* out_ = nullptr;
  Relayout forward_;
  dnnl::reorder backward_;
  Args backward_args_;
  Alias diff_in_;
  dnnl::memory diff_out_;
};

}  // namespace

std::unique_ptr<Layer> make_transpose(const NodeSpec& node, LayerBuilder& builder) {
  return std::make_unique<Transpose>(node, builder);
}

}  // namespace onednn
