// concat along any per-example axis ("axis": counted from the end, -1 the last, or from 0): each input is reordered
// straight into its slice of the output (canonical, nhwc or row-major, or a producer's channel-blocked layout), and
// backward reorders each slice of the gradient back.
#include "../layout.hpp"
#include "../relayout.hpp"
#include "registry.hpp"

namespace onednn {
namespace {

// oneDNN's dim of per-example axis k: images are {N, C, H, W}, every other rank {N, s0, s1, ...}.
int onednn_axis(const Shape& shape, size_t k) {
  if (is_image(shape)) return k == 2 ? 1 : static_cast<int>(k) + 2;
  return static_cast<int>(k) + 1;
}

// The output's layout: a channel join of images whose channel counts all fill whole blocks of the blocked layout a
// producer chose (nChw16c from a convolution) keeps that layout, so that the convolution reading the join takes
// it as it is and hands its gradient back in it; otherwise the canonical layout.
md output_desc(const LayerBuilder& b, const Shape& out, size_t k) {
  const int64_t N = b.batch();
  const md canonical = canonical_md(N, out, b.compute_type());
  if (!is_image(out) || k != 2) return canonical;
  for (const tag blocked : {tag::aBcd16b, tag::aBcd8b}) {
    const int64_t block = blocked == tag::aBcd16b ? 16 : 8;
    bool fills = true, chosen = false;
    for (size_t i = 0; i < b.input_count(); ++i) {
      const Value& in = b.input(i);
      fills = fills && in.shape[2] % block == 0;
      const md& d = in.mem.get_desc();
      chosen = chosen || d == md(d.dims(), d.data_type(), blocked);
    }
    if (fills && chosen) return md(batch_dims(N, out), b.compute_type(), blocked);
  }
  return canonical;
}

class Concat : public Layer {
 public:
  Concat(const NodeSpec& node, LayerBuilder& b) {
    if (b.input_count() < 2) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "concat takes two or more inputs");
    const Shape& first = b.input(0).shape;
    const int64_t rank = static_cast<int64_t>(first.size());
    const int64_t axis = node.attr_int("axis", -1);
    if (rank == 0 || axis < -rank || axis >= rank)
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "attribute 'axis' (" + std::to_string(axis) + ") names no axis of '" +
                                                 b.input(0).name + "' " + shape_string(first));
    const size_t k = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    Shape out = first;
    out[k] = 0;
    for (size_t i = 0; i < b.input_count(); ++i) {
      const Shape& s = b.input(i).shape;
      bool agree = s.size() == first.size();
      for (size_t d = 0; agree && d < s.size(); ++d) agree = d == k || s[d] == first[d];
      if (!agree)
        node.fail(RAMJET_ERR_INVALID_ARGUMENT, "inputs '" + b.input(0).name + "' " + shape_string(first) + " and '" +
                                                   b.input(i).name + "' " + shape_string(s) +
                                                   " differ on an axis other than the joined one (" +
                                                   std::to_string(k) + ")");
      out[k] += s[k];
    }
    b.check_shape(out);
    const int64_t N = b.batch();
    const md out_md = output_desc(b, out, k);
    b.define_output(out_md);
    Value& o = b.output();
    out_ = &o;
    const int dim = onednn_axis(first, k);
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
      offset += in.shape[k];
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
