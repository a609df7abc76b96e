// concat along the last axis (channels for images): each input is reordered straight into its slice of the
// row-major output, and backward reorders each slice of the gradient back.
#include "../layout.hpp"
#include "../relayout.hpp"
#include "registry.hpp"

namespace onednn {
namespace {

class Concat : public Layer {
 public:
  Concat(const NodeSpec& node, LayerBuilder& b) {
    if (b.input_count() < 2) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "concat takes two or more inputs");
    const Shape& first = b.input(0).shape;
    const int64_t rank = static_cast<int64_t>(first.size());
    const int64_t axis = node.attr_int("axis", -1);
    if (rank == 0 || (axis != -1 && axis != rank - 1))
      node.fail(RAMJET_ERR_UNSUPPORTED, "concat joins the last axis only");
    Shape out = first;
    out.back() = 0;
    for (size_t i = 0; i < b.input_count(); ++i) {
      const Shape& s = b.input(i).shape;
      if (s.size() != first.size() || !std::equal(first.begin(), first.end() - 1, s.begin()))
        node.fail(RAMJET_ERR_INVALID_ARGUMENT, "inputs '" + b.input(0).name + "' " + shape_string(first) + " and '" +
                                                   b.input(i).name + "' " + shape_string(s) +
                                                   " differ before the last axis");
      out.back() += s.back();
    }
    b.check_shape(out);
    const int64_t N = b.batch();
    const md out_md = canonical_md(N, out, b.compute_type());
    b.define_output(out_md);
    Value& o = b.output();
    out_ = &o;
    const int dim = last_axis(first);
    int64_t offset = 0;
    for (size_t i = 0; i < b.input_count(); ++i) {
      Value& in = b.input(i);
      dnnl::memory::dims offsets(out_md.data.ndims, 0);
      offsets[static_cast<size_t>(dim)] = offset;
      const md slice = out_md.submemory_desc(batch_dims(N, in.shape), offsets);
      Part part{&in, Relayout(in.mem, dnnl::memory(slice, b.engine(), o.mem.get_data_handle())), {}, {}};
      if (b.backward() && in.needs_grad) {
        const dnnl::memory diff(slice, b.engine(), o.diff.get_data_handle());
        part.diff_set = Relayout(diff, in.diff);
        part.diff_add = Relayout(diff, in.diff, /*accumulate=*/true);
      }
      parts_.push_back(std::move(part));
      offset += in.shape.back();
    }
  }

  void forward(const Exec& exec) override {
    for (const Part& p : parts_) p.in.run(exec);
  }

  void backward(const Exec& exec) override {
    read_diff(*out_);
    for (Part& p : parts_) {
      if (!p.value->needs_grad) continue;
      (p.value->diff_written ? p.diff_add : p.diff_set).run(exec);
      p.value->diff_written = true;
    }
  }

 private:
  struct Part {
    Value* value;
    Relayout in, diff_set, diff_add;
  };
  Value* out_ = nullptr;
  std::vector<Part> parts_;
};

}  // namespace

std::unique_ptr<Layer> make_concat(const NodeSpec& node, LayerBuilder& builder) {
  return std::make_unique<Concat>(node, builder);
}

}  // namespace onednn
