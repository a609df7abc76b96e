// max_pool, avg_pool (padding excluded from the average, as Keras's "same" pooling), global_avg_pool and
// global_max_pool ([H, W, C] -> [C], or over time: [T, C] -> [C]). Max pooling keeps the forward's workspace for
// its backward.
#include "../channel_mean.hpp"
#include "../edge.hpp"
#include "../layout.hpp"
#include "registry.hpp"

#include <algorithm>

namespace onednn {
namespace {

class Pool : public Layer {
 public:
  Pool(const NodeSpec& node, LayerBuilder& b, dnnl::algorithm algorithm, bool global) {
    if (b.input_count() != 1) node.fail(RAMJET_ERR_INVALID_ARGUMENT, node.op + " takes one input");
    b.require_rank(3, "an image [H, W, C]");
    const ramjet::ir::PoolGeometry g = ramjet::ir::pool_geometry(node, b.input(0).shape, global);
    const int64_t C = g.C, N = b.batch(), OH = g.OH, OW = g.OW;
    const auto &k = g.kernel, &s = g.strides, &pad = g.padding;
    b.check_shape(global ? Shape{C} : Shape{OH, OW, C});
    out_ = &b.output();

    const md src = b.compute_desc(b.input(0));  // pooling takes whatever layout its producer chose
    const md dst_any({N, C, OH, OW}, b.compute_type(), tag::any);
    const dnnl::memory::dims strides{s[0], s[1]}, kernel{k[0], k[1]}, pad_l{pad[0], pad[2]}, pad_r{pad[1], pad[3]};
    const dnnl::pooling_forward::primitive_desc pd(
        {b.forward_kind(), algorithm, src, dst_any, strides, kernel, pad_l, pad_r}, b.attr(), b.engine());
    fwd_ = dnnl::pooling_forward(pd);
    in_ = Edge(b, b.input(0), src);

    if (global) {
      // The output is a [C] vector: a {N, C} tensor. The pooled {N, C, 1, 1} result moves there (or already is
      // there when the primitive chose a plain layout).
      b.define_output(canonical_md(N, {C}, b.compute_type()));
      const md flat4({N, C, 1, 1}, b.compute_type(), tag::nhwc);
      const dnnl::memory out4(flat4, b.engine(), out_->mem.get_data_handle());
      pooled_ = pd.dst_desc() == flat4 ? out4 : b.transient(pd.dst_desc());
      to_out_ = Relayout(pooled_, out4);
    } else {
      b.define_output(pd.dst_desc());
      pooled_ = out_->mem;
    }
    fwd_args_ = {{DNNL_ARG_SRC, in_.mem()}, {DNNL_ARG_DST, pooled_}};
    const bool backward = b.backward() && in_.needs_grad();
    if (pd.workspace_desc().get_size() > 0) {  // max pooling in training: the argmax positions
      workspace_ = b.transient(pd.workspace_desc());
      fwd_args_[DNNL_ARG_WORKSPACE] = workspace_;
    }
    b.use_scratchpad(pd, fwd_args_);
    if (!backward) return;

    const dnnl::pooling_backward::primitive_desc bpd({algorithm, src, pd.dst_desc(), strides, kernel, pad_l, pad_r},
                                                     b.attr(), b.engine(), pd);
    bwd_ = dnnl::pooling_backward(bpd);
    dnnl::memory pooled_diff = out_->diff;
    if (global) {
      const dnnl::memory diff4(md({N, C, 1, 1}, b.compute_type(), tag::nhwc), b.engine(), out_->diff.get_data_handle());
      pooled_diff = pd.dst_desc() == diff4.get_desc() ? diff4 : b.transient_grad(pd.dst_desc());
      from_out_diff_ = Relayout(diff4, pooled_diff);
    }
    bwd_args_ = {{DNNL_ARG_DIFF_DST, pooled_diff}};
    if (workspace_) bwd_args_[DNNL_ARG_WORKSPACE] = workspace_;
    b.use_scratchpad(bpd, bwd_args_);
  }

  void forward(const Exec& exec) override {
    in_.forward(exec);
    exec.run(fwd_, fwd_args_);
    to_out_.run(exec);
  }

  void backward(const Exec& exec) override {
    if (!in_.needs_grad()) return;
    read_diff(*out_);
    from_out_diff_.run(exec);
    bwd_args_[DNNL_ARG_DIFF_SRC] = in_.begin_diff();
    exec.run(bwd_, bwd_args_);
    in_.end_diff(exec);
  }

 private:
  Edge in_;
  Value* out_ = nullptr;
  dnnl::memory pooled_, workspace_;
  Relayout to_out_, from_out_diff_;
  dnnl::pooling_forward fwd_;
  dnnl::pooling_backward bwd_;
  Args fwd_args_, bwd_args_;
};

// global_avg_pool / global_max_pool over time: [T, C] → [C], as a 1-D pooling of {N, C, T} (nwc: the host's
// row-major [N, T, C]) whose {N, C, 1} result is the {N, C} output itself.
class GlobalPoolOverTime : public Layer {
 public:
  GlobalPoolOverTime(const NodeSpec& node, LayerBuilder& b, dnnl::algorithm algorithm) {
    const Shape& in = b.input(0).shape;
    const int64_t T = in[0], C = in[1], N = b.batch();
    b.check_shape({C});
    const dt type = b.compute_type();
    const dnnl::engine& e = b.engine();
    const md src({N, C, T}, type, tag::nwc), dst({N, C, 1}, type, tag::nwc);
    const dnnl::pooling_forward::primitive_desc pd(
        {b.forward_kind(), algorithm, src, dst, {1}, {T}, {0}, {0}}, b.attr(), e);
    fwd_ = dnnl::pooling_forward(pd);
    in_ = Edge(b, b.input(0), canonical_md(N, in, type));
    b.define_output(canonical_md(N, {C}, type));
    out_ = &b.output();
    fwd_args_ = {{DNNL_ARG_SRC, dnnl::memory(src, e, in_.mem().get_data_handle())},
                 {DNNL_ARG_DST, dnnl::memory(dst, e, out_->mem.get_data_handle())}};
    if (pd.workspace_desc().get_size() > 0) {
      workspace_ = b.transient(pd.workspace_desc());
      fwd_args_[DNNL_ARG_WORKSPACE] = workspace_;
    }
    b.use_scratchpad(pd, fwd_args_);
    if (!b.backward() || !in_.needs_grad()) return;
    const dnnl::pooling_backward::primitive_desc bpd({algorithm, src, dst, {1}, {T}, {0}, {0}}, b.attr(), e, pd);
    bwd_ = dnnl::pooling_backward(bpd);
    bwd_args_ = {{DNNL_ARG_DIFF_DST, dnnl::memory(dst, e, out_->diff.get_data_handle())}};
    if (workspace_) bwd_args_[DNNL_ARG_WORKSPACE] = workspace_;
    diff_in_ = dnnl::memory(src, e, DNNL_MEMORY_NONE);
    b.use_scratchpad(bpd, bwd_args_);
    (void)node;
  }

  void forward(const Exec& exec) override {
    in_.forward(exec);
    exec.run(fwd_, fwd_args_);
  }

  void backward(const Exec& exec) override {
    if (!in_.needs_grad()) return;
    read_diff(*out_);
    diff_in_.set_data_handle(in_.begin_diff().get_data_handle());
    bwd_args_[DNNL_ARG_DIFF_SRC] = diff_in_;
    exec.run(bwd_, bwd_args_);
    in_.end_diff(exec);
  }

 private:
  Edge in_;
  Value* out_ = nullptr;
  dnnl::memory workspace_, diff_in_;
  dnnl::pooling_forward fwd_;
  dnnl::pooling_backward bwd_;
  Args fwd_args_, bwd_args_;
};

// global_avg_pool of an image whose channels lie in runs channel_mean.hpp reads: its loops in place of oneDNN's
// pooling primitive, the [C] result written straight into the output (no reorder of a {N, C, 1, 1} map).
class GlobalMean : public Layer {
 public:
  GlobalMean(LayerBuilder& b, const md& src, const ChannelRuns& runs) : runs_(runs) {
    b.check_shape({runs.channels});
    in_ = Edge(b, b.input(0), src);
    b.define_output(canonical_md(b.batch(), {runs.channels}, b.compute_type()));
    out_ = &b.output();
  }

  void forward(const Exec& exec) override {
    in_.forward(exec);
    channel_mean(in_.mem().get_data_handle(), runs_, out_->mem.get_data_handle());
  }

  void backward(const Exec& exec) override {
    if (!in_.needs_grad()) return;
    const dnnl::memory& dmean = read_diff(*out_);
    channel_mean_backward(dmean.get_data_handle(), runs_, in_.begin_diff().get_data_handle());
    in_.end_diff(exec);
  }

 private:
  ChannelRuns runs_;
  Edge in_;
  Value* out_ = nullptr;
};

std::unique_ptr<Layer> make_global(const NodeSpec& node, LayerBuilder& b, dnnl::algorithm algorithm) {
  if (b.input_count() == 1 && b.input(0).shape.size() == 2)
    return std::make_unique<GlobalPoolOverTime>(node, b, algorithm);
  if (algorithm == dnnl::algorithm::pooling_avg_exclude_padding && b.input_count() == 1 &&
      b.input(0).shape.size() == 3) {
    const md src = b.compute_desc(b.input(0));
    const std::optional<ChannelRuns> runs = channel_runs(src);
    if (runs && runs->examples == b.batch() && channel_mean_applies(*runs))
      return std::make_unique<GlobalMean>(b, src, *runs);
  }
  return std::make_unique<Pool>(node, b, algorithm, true);
}

}  // namespace

std::unique_ptr<Layer> make_max_pool(const NodeSpec& node, LayerBuilder& builder) {
  return std::make_unique<Pool>(node, builder, dnnl::algorithm::pooling_max, false);
}
std::unique_ptr<Layer> make_avg_pool(const NodeSpec& node, LayerBuilder& builder) {
  return std::make_unique<Pool>(node, builder, dnnl::algorithm::pooling_avg_exclude_padding, false);
}
std::unique_ptr<Layer> make_global_avg_pool(const NodeSpec& node, LayerBuilder& builder) {
  return make_global(node, builder, dnnl::algorithm::pooling_avg_exclude_padding);
}
std::unique_ptr<Layer> make_global_max_pool(const NodeSpec& node, LayerBuilder& builder) {
  return make_global(node, builder, dnnl::algorithm::pooling_max);
}

}  // namespace onednn
