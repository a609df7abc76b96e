// multi_head_attention: Keras's MultiHeadAttention on sequences. Inputs [query], [query, value] or [query, value,
// key]; kernels query/key [D, heads, key_dim], value [D, heads, value_dim], attention_output [heads, value_dim, out]
// with biases [heads, dim] and [out]. Per example and head:
//   Q = x_q Wq + bq, K = x_k Wk + bk, V = x_v Wv + bv        (one matmul each over every row of the batch)
//   S = Q Kᵀ / sqrt(key_dim)  (+ −1e9 above the diagonal with use_causal_mask, as Keras's masked softmax does)
//   P = softmax(S), dropout(P) in training, O = P V, out = O Wo + bo
// Heads are never split into buffers of their own: Q, K, V and O stay [N, T, heads · dim] and the per-head
// matmuls read them through strides. Scores and probabilities are float32 in both precisions (as Keras keeps
// softmax in float32); with bf16 compute, P and the score gradient are rounded to bf16 for the matmuls that read
// them.
#include "../edge.hpp"
#include "../kernels.hpp"
#include "../relayout.hpp"
#include "../weights.hpp"
#include "matmul_views.hpp"
#include "registry.hpp"

#include <array>
#include <cmath>
#include <map>
#include <optional>

namespace onednn {
namespace {

// A batch of per-head matrices kept as [N, T, heads, dim], seen as {N, heads, T, dim} (or its transpose).
md heads_md(int64_t n, int64_t t, int64_t heads, int64_t dim, bool transposed, dt type) {
  if (transposed) return md({n, heads, dim, t}, type, {t * heads * dim, dim, 1, heads * dim});
  return md({n, heads, t, dim}, type, {t * heads * dim, dim, heads * dim, 1});
}

// A batch of per-head square-ish matrices [N, heads, Tq, Tv] (plain), or its transpose.
md scores_md(int64_t n, int64_t heads, int64_t tq, int64_t tv, bool transposed, dt type) {
  if (transposed) return md({n, heads, tv, tq}, type, {heads * tq * tv, tq * tv, 1, tv});
  return md({n, heads, tq, tv}, type, {heads * tq * tv, tq * tv, tv, 1});
}

void fill(const dnnl::memory& m, float value) {
  const Elements x(m);
  const int64_t n = static_cast<int64_t>(m.get_desc().get_size() / (x.bf16 ? 2 : 4));
  for (int64_t i = 0; i < n; ++i) x.set(i, value);
}

// One of the three input projections: its parameters, buffers and the matmuls of both passes.
struct Projection {
  Param* kernel = nullptr;
  Param* bias = nullptr;
  WeightsView weights;
  dnnl::memory weights_mem, weights_t, bias_mem;
  int edge = 0;  // which of the layer's input edges it reads
  int64_t rows = 0, in = 0, width = 0;
  dnnl::memory out, out_rows, diff, diff_rows, src_rows, src_t;
  MatMul forward, weight_grad, bias_grad, data_grad;
  GradSink kernel_grad, bias_grad_sink;
};

class MultiHeadAttention : public Layer {
 public:
  MultiHeadAttention(const NodeSpec& node, LayerBuilder& b) : salt_(node.index) {
    const size_t inputs = b.input_count();
    if (inputs < 1 || inputs > 3) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "multi_head_attention takes 1 to 3 inputs");
    const Value& q_in = b.input(0);
    const Value& v_in = b.input(inputs > 1 ? 1 : 0);
    const Value& k_in = b.input(inputs > 2 ? 2 : inputs > 1 ? 1 : 0);
    for (const Value* v : {&q_in, &v_in, &k_in})
      if (v->shape.size() != 2) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "multi_head_attention needs sequences [T, D]");
    N_ = b.batch();
    Tq_ = q_in.shape[0], Tv_ = v_in.shape[0];
    if (k_in.shape[0] != Tv_) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "key and value differ in length");
    H_ = node.attr_int("num_heads");
    Kd_ = node.attr_int("key_dim");
    Vd_ = node.attr_int("value_dim", Kd_);
    Do_ = node.attr_int("output_shape", q_in.shape[1]);
    const bool use_bias = node.attr_bool("use_bias", true);
    causal_ = node.attr_bool("use_causal_mask", false);
    rate_ = static_cast<float>(node.attr_number("dropout", 0.0));
    if (H_ < 1 || Kd_ < 1 || Vd_ < 1 || Do_ < 1 || !(rate_ >= 0.0f && rate_ < 1.0f))
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "num_heads, key_dim, value_dim and output_shape must be >= 1, dropout in [0, 1)");
    if (causal_ && Tq_ != Tv_) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "a causal mask needs query and value of one length");
    b.check_shape({Tq_, Do_});
    type_ = b.compute_type();
    engine_ = b.engine();
    backward_ = b.backward();

    // One edge per distinct input value (self-attention reads one value three times).
    std::map<const Value*, int> edge_of;
    auto edge_for = [&](const Value& v) {
      auto [it, added] = edge_of.emplace(&v, static_cast<int>(edges_.size()));
      if (added) edges_.emplace_back(b, const_cast<Value&>(v), canonical_md(N_, v.shape, type_));
      return it->second;
    };
    edges_.reserve(3);
    project(b, 0, "query", edge_for(q_in), N_ * Tq_, q_in.shape[1], H_ * Kd_, use_bias);
    project(b, 1, "key", edge_for(k_in), N_ * Tv_, k_in.shape[1], H_ * Kd_, use_bias);
    project(b, 2, "value", edge_for(v_in), N_ * Tv_, v_in.shape[1], H_ * Vd_, use_bias);
    build_attention(b);
    build_output(b, use_bias);
    if (backward_) build_backward(b);
  }

  void forward(const Exec& exec) override {
    for (const Edge& e : edges_) e.forward(exec);
    for (Projection& p : proj_) {
      p.weights.refresh(exec);
      p.forward.run(exec, p.src_rows, p.weights_mem, p.out_rows);
    }
    scores_.run(exec, q_heads_, k_heads_t_, s_);
    if (causal_) exec.run(mask_add_, mask_args_);
    exec.run(softmax_, softmax_args_);
    dropped_ = exec.training && rate_ > 0.0f;
    seed_ = exec.seed;
    if (dropped_) dropout_memory(p_dropped_, p_, rate_, seed_, salt_);
    const dnnl::memory& used = dropped_ ? p_dropped_ : p_;
    if (to_compute_type_[dropped_]) to_compute_type_[dropped_]->run(exec);
    context_.run(exec, p_compute_ ? p_compute_ : used, v_heads_, o_heads_);
    wo_.refresh(exec);
    out_proj_.run(exec, o_rows_, wo_mem_, out_rows_);
  }

  void backward(const Exec& exec) override {
    read_diff(*out_);
    // The output projection: d Wo, d bo, d O.
    wo_grad_mm_.run(exec, o_t_, d_out_rows_, wo_grad_.target(exec));
    wo_grad_.commit(exec);
    if (bo_grad_) {
      bo_grad_mm_.run(exec, ones_q_, d_out_rows_, bo_grad_.target(exec));
      bo_grad_.commit(exec);
    }
    wo_.refresh(exec);
    d_context_.run(exec, d_out_rows_, wo_t_, d_o_rows_);
    // Through the attention: d P, d V, then d S and d Q, d K.
    d_probs_.run(exec, d_o_heads_, v_heads_t_, d_p_);
    d_values_.run(exec, p_compute_t_, d_o_heads_, d_v_heads_);
    if (dropped_) dropout_memory(d_p_, d_p_, rate_, seed_, salt_);
    exec.run(softmax_bwd_, softmax_bwd_args_);
    d_s_to_compute_.run(exec);  // nothing in float32
    d_queries_.run(exec, d_s_compute_, k_heads_, d_q_heads_);
    d_keys_.run(exec, d_s_compute_t_, q_heads_, d_k_heads_);
    // The projections: their parameters' gradients, and each input's, summed over the projections reading it.
    std::array<bool, 3> started{};  // an edge whose gradient the first projection reading it has written
    for (size_t i = 0; i < 3; ++i) {
      Projection& p = proj_[i];
      p.weights.refresh(exec);
      p.weight_grad.run(exec, p.src_t, p.diff_rows, p.kernel_grad.target(exec));
      p.kernel_grad.commit(exec);
      if (p.bias) {
        p.bias_grad.run(exec, i == 0 ? ones_q_ : ones_v_, p.diff_rows, p.bias_grad_sink.target(exec));
        p.bias_grad_sink.commit(exec);
      }
    }
    for (size_t e = 0; e < edges_.size(); ++e) {
      if (!edges_[e].needs_grad()) continue;
      const dnnl::memory target = edges_[e].begin_diff();
      for (size_t i = 0; i < 3; ++i) {
        Projection& p = proj_[i];
        if (p.edge != static_cast<int>(e)) continue;
        MatMul& mm = started[e] ? data_grad_add_[i] : p.data_grad;
        mm.run(exec, p.diff_rows, p.weights_t, data_rows_[i].over(target));
        started[e] = true;
      }
      edges_[e].end_diff(exec);
    }
  }

 private:
  void project(LayerBuilder& b, size_t index, const std::string& role, int edge, int64_t rows, int64_t in,
               int64_t width, bool use_bias) {
    Projection& p = proj_[index];
    const int64_t per_head = width / H_;
    p.edge = edge;
    p.rows = rows, p.in = in, p.width = width;
    p.kernel = &b.param((role + "/kernel").c_str(), {in, H_, per_head});
    if (use_bias) p.bias = &b.param((role + "/bias").c_str(), {H_, per_head});
    const md keras = plain_md({in, width}, dt::f32);
    p.weights = WeightsView(b, *p.kernel, keras);
    p.weights_mem = p.weights.compute(plain_md({in, width}, type_));
    p.weights_t = dnnl::memory(transposed_md(in, width, type_), engine_, p.weights_mem.get_data_handle());
    const md bias_md = use_bias ? plain_md({1, width}, dt::f32) : md();
    if (use_bias) p.bias_mem = dnnl::memory(bias_md, engine_, p.bias->value.get_data_handle());
    const md rows_md = plain_md({rows, width}, type_), src_md = plain_md({rows, in}, type_);
    p.out = dnnl::memory(rows_md, engine_);
    p.out_rows = p.out;
    p.src_rows = dnnl::memory(src_md, engine_, edges_[static_cast<size_t>(edge)].mem().get_data_handle());
    p.forward = MatMul(engine_, src_md, p.weights_mem.get_desc(), rows_md, bias_md);
    b.use_scratchpad(p.forward.pd, p.forward.args);
    if (use_bias) p.forward.args[DNNL_ARG_BIAS] = p.bias_mem;
    if (!b.backward()) return;
    p.diff = dnnl::memory(rows_md, engine_);
    p.diff_rows = p.diff;
    p.src_t = dnnl::memory(transposed_md(rows, in, type_), engine_, p.src_rows.get_data_handle());
    p.weight_grad = MatMul(engine_, transposed_md(rows, in, type_), rows_md, keras);
    p.kernel_grad = GradSink(b, *p.kernel, keras, keras);
    b.use_scratchpad(p.weight_grad.pd, p.weight_grad.args);
    if (use_bias) {
      p.bias_grad = MatMul(engine_, plain_md({1, rows}, type_), rows_md, bias_md);
      p.bias_grad_sink = GradSink(b, *p.bias, bias_md, bias_md);
      b.use_scratchpad(p.bias_grad.pd, p.bias_grad.args);
    }
    p.data_grad = MatMul(engine_, rows_md, transposed_md(in, width, type_), src_md);
    data_grad_add_[index] = MatMul(engine_, rows_md, transposed_md(in, width, type_), src_md, md(), 1.0f, true);
    data_rows_[index] = Alias(src_md, engine_);
    b.use_scratchpad(p.data_grad.pd, p.data_grad.args);
    b.use_scratchpad(data_grad_add_[index].pd, data_grad_add_[index].args);
  }

  void build_attention(LayerBuilder& b) {
    const dt f32 = dt::f32;
    q_heads_ = dnnl::memory(heads_md(N_, Tq_, H_, Kd_, false, type_), engine_, q_.out.get_data_handle());
    k_heads_ = dnnl::memory(heads_md(N_, Tv_, H_, Kd_, false, type_), engine_, k_.out.get_data_handle());
    k_heads_t_ = dnnl::memory(heads_md(N_, Tv_, H_, Kd_, true, type_), engine_, k_.out.get_data_handle());
    v_heads_ = dnnl::memory(heads_md(N_, Tv_, H_, Vd_, false, type_), engine_, v_.out.get_data_handle());
    const md scores = scores_md(N_, H_, Tq_, Tv_, false, f32);
    s_ = dnnl::memory(scores, engine_);
    p_ = dnnl::memory(scores, engine_);
    if (rate_ > 0.0f) p_dropped_ = dnnl::memory(scores, engine_);
    const float scale = 1.0f / std::sqrt(static_cast<float>(Kd_));
    scores_ = MatMul(engine_, q_heads_.get_desc(), k_heads_t_.get_desc(), scores, md(), scale);
    b.use_scratchpad(scores_.pd, scores_.args);
    if (causal_) {
      // A separate in-place add: as the matmul's binary post-op, oneDNN 2.6 falls back to its reference matmul
      // (1.4 s a step for 32 × 4 heads × 128², against milliseconds).
      mask_ = dnnl::memory(md({1, 1, Tq_, Tv_}, f32, tag::abcd), engine_);
      float* m = floats(mask_);
      for (int64_t i = 0; i < Tq_; ++i)
        for (int64_t j = 0; j < Tv_; ++j) m[i * Tv_ + j] = j > i ? -1e9f : 0.0f;
      const dnnl::binary::primitive_desc mpd({dnnl::algorithm::binary_add, scores, mask_.get_desc(), scores}, b.attr(),
                                             engine_);
      mask_add_ = dnnl::binary(mpd);
      mask_args_ = {{DNNL_ARG_SRC_0, s_}, {DNNL_ARG_SRC_1, mask_}, {DNNL_ARG_DST, s_}};
      b.use_scratchpad(mpd, mask_args_);
    }
    const dnnl::softmax_forward::primitive_desc spd({b.forward_kind(), scores, 3}, b.attr(), engine_);
    softmax_pd_ = spd;
    softmax_ = dnnl::softmax_forward(spd);
    softmax_args_ = {{DNNL_ARG_SRC, s_}, {DNNL_ARG_DST, p_}};
    b.use_scratchpad(spd, softmax_args_);
    // With bf16 compute, P × V needs P in bf16.
    const md p_compute_md = scores_md(N_, H_, Tq_, Tv_, false, type_);
    if (type_ != f32) {
      p_compute_ = dnnl::memory(p_compute_md, engine_);
      to_compute_type_[0].emplace(p_, p_compute_);
      if (p_dropped_) to_compute_type_[1].emplace(p_dropped_, p_compute_);
    }
    o_ = dnnl::memory(plain_md({N_ * Tq_, H_ * Vd_}, type_), engine_);
    o_heads_ = dnnl::memory(heads_md(N_, Tq_, H_, Vd_, false, type_), engine_, o_.get_data_handle());
    context_ = MatMul(engine_, p_compute_md, v_heads_.get_desc(), o_heads_.get_desc());
    b.use_scratchpad(context_.pd, context_.args);
  }

  void build_output(LayerBuilder& b, bool use_bias) {
    wo_param_ = &b.param("attention_output/kernel", {H_, Vd_, Do_});
    const md keras = plain_md({H_ * Vd_, Do_}, dt::f32);
    wo_ = WeightsView(b, *wo_param_, keras);
    wo_mem_ = wo_.compute(plain_md({H_ * Vd_, Do_}, type_));
    wo_t_ = dnnl::memory(transposed_md(H_ * Vd_, Do_, type_), engine_, wo_mem_.get_data_handle());
    const md bias_md = use_bias ? plain_md({1, Do_}, dt::f32) : md();
    const md rows = plain_md({N_ * Tq_, Do_}, type_);
    b.define_output(canonical_md(N_, {Tq_, Do_}, type_));
    out_ = &b.output();
    out_rows_ = dnnl::memory(rows, engine_, out_->mem.get_data_handle());
    o_rows_ = o_;
    out_proj_ = MatMul(engine_, o_.get_desc(), wo_mem_.get_desc(), rows, bias_md);
    b.use_scratchpad(out_proj_.pd, out_proj_.args);
    if (use_bias) {
      bo_param_ = &b.param("attention_output/bias", {Do_});
      out_proj_.args[DNNL_ARG_BIAS] = dnnl::memory(bias_md, engine_, bo_param_->value.get_data_handle());
    }
  }

  void build_backward(LayerBuilder& b) {
    const dt f32 = dt::f32;
    const md rows = plain_md({N_ * Tq_, Do_}, type_), o_rows = o_.get_desc();
    const md keras_wo = plain_md({H_ * Vd_, Do_}, f32);
    d_out_rows_ = dnnl::memory(rows, engine_, out_->diff.get_data_handle());
    o_t_ = dnnl::memory(transposed_md(N_ * Tq_, H_ * Vd_, type_), engine_, o_.get_data_handle());
    wo_grad_mm_ = MatMul(engine_, o_t_.get_desc(), rows, keras_wo);
    wo_grad_ = GradSink(b, *wo_param_, keras_wo, keras_wo);
    b.use_scratchpad(wo_grad_mm_.pd, wo_grad_mm_.args);
    const int64_t longest = std::max(N_ * Tq_, N_ * Tv_);
    ones_ = dnnl::memory(plain_md({1, longest}, type_), engine_);
    fill(ones_, 1.0f);
    ones_q_ = dnnl::memory(plain_md({1, N_ * Tq_}, type_), engine_, ones_.get_data_handle());
    ones_v_ = dnnl::memory(plain_md({1, N_ * Tv_}, type_), engine_, ones_.get_data_handle());
    if (bo_param_) {
      const md bias_md = plain_md({1, Do_}, f32);
      bo_grad_mm_ = MatMul(engine_, ones_q_.get_desc(), rows, bias_md);
      bo_grad_ = GradSink(b, *bo_param_, bias_md, bias_md);
      b.use_scratchpad(bo_grad_mm_.pd, bo_grad_mm_.args);
    }
    d_o_rows_ = dnnl::memory(o_rows, engine_);
    d_context_ = MatMul(engine_, rows, wo_t_.get_desc(), o_rows);
    b.use_scratchpad(d_context_.pd, d_context_.args);
    d_o_heads_ = dnnl::memory(heads_md(N_, Tq_, H_, Vd_, false, type_), engine_, d_o_rows_.get_data_handle());
    v_heads_t_ = dnnl::memory(heads_md(N_, Tv_, H_, Vd_, true, type_), engine_, v_.out.get_data_handle());
    const md scores = scores_md(N_, H_, Tq_, Tv_, false, f32);
    d_p_ = dnnl::memory(scores, engine_);
    d_probs_ = MatMul(engine_, d_o_heads_.get_desc(), v_heads_t_.get_desc(), scores);
    b.use_scratchpad(d_probs_.pd, d_probs_.args);
    // d V = Pᵀ d O, P as the context matmul read it (dropped out, in the compute type).
    const dnnl::memory& p_read = p_compute_ ? p_compute_ : (p_dropped_ ? p_dropped_ : p_);
    p_compute_t_ = dnnl::memory(scores_md(N_, H_, Tq_, Tv_, true, type_), engine_, p_read.get_data_handle());
    d_v_heads_ = dnnl::memory(heads_md(N_, Tv_, H_, Vd_, false, type_), engine_, v_.diff.get_data_handle());
    d_values_ = MatMul(engine_, p_compute_t_.get_desc(), d_o_heads_.get_desc(), d_v_heads_.get_desc());
    b.use_scratchpad(d_values_.pd, d_values_.args);
    d_s_ = dnnl::memory(scores, engine_);
    const dnnl::softmax_backward::primitive_desc sbpd({scores, scores, 3}, b.attr(), engine_, softmax_pd_);
    softmax_bwd_ = dnnl::softmax_backward(sbpd);
    softmax_bwd_args_ = {{DNNL_ARG_DST, p_}, {DNNL_ARG_DIFF_DST, d_p_}, {DNNL_ARG_DIFF_SRC, d_s_}};
    b.use_scratchpad(sbpd, softmax_bwd_args_);
    d_s_compute_ = d_s_;
    if (type_ != f32) {
      d_s_compute_ = dnnl::memory(scores_md(N_, H_, Tq_, Tv_, false, type_), engine_);
      d_s_to_compute_ = Relayout(d_s_, d_s_compute_);
    }
    d_s_compute_t_ = dnnl::memory(scores_md(N_, H_, Tq_, Tv_, true, type_), engine_, d_s_compute_.get_data_handle());
    const float scale = 1.0f / std::sqrt(static_cast<float>(Kd_));
    d_q_heads_ = dnnl::memory(heads_md(N_, Tq_, H_, Kd_, false, type_), engine_, q_.diff.get_data_handle());
    d_k_heads_ = dnnl::memory(heads_md(N_, Tv_, H_, Kd_, false, type_), engine_, k_.diff.get_data_handle());
    d_queries_ = MatMul(engine_, d_s_compute_.get_desc(), k_heads_.get_desc(), d_q_heads_.get_desc(), md(), scale);
    d_keys_ = MatMul(engine_, d_s_compute_t_.get_desc(), q_heads_.get_desc(), d_k_heads_.get_desc(), md(), scale);
    b.use_scratchpad(d_queries_.pd, d_queries_.args);
    b.use_scratchpad(d_keys_.pd, d_keys_.args);
  }

  int64_t N_ = 0, Tq_ = 0, Tv_ = 0, H_ = 0, Kd_ = 0, Vd_ = 0, Do_ = 0;
  bool causal_ = false, backward_ = false, dropped_ = false;
  float rate_ = 0.0f;
  uint64_t salt_, seed_ = 0;
  dt type_ = dt::f32;
  dnnl::engine engine_;
  std::vector<Edge> edges_;
  Projection proj_[3];  // query, key, value
  Projection& q_ = proj_[0];
  Projection& k_ = proj_[1];
  Projection& v_ = proj_[2];
  MatMul data_grad_add_[3];
  Alias data_rows_[3];
  Value* out_ = nullptr;
  dnnl::memory q_heads_, k_heads_, k_heads_t_, v_heads_, s_, p_, p_dropped_, p_compute_, mask_, o_, o_heads_;
  std::optional<Relayout> to_compute_type_[2];
  MatMul scores_, context_, out_proj_;
  dnnl::binary mask_add_;
  Args mask_args_;
  dnnl::softmax_forward::primitive_desc softmax_pd_;
  dnnl::softmax_forward softmax_;
  Args softmax_args_;
  Param* wo_param_ = nullptr;
  Param* bo_param_ = nullptr;
  WeightsView wo_;
  dnnl::memory wo_mem_, wo_t_, out_rows_, o_rows_;
  // backward
  dnnl::memory d_out_rows_, o_t_, ones_, ones_q_, ones_v_, d_o_rows_, d_o_heads_, v_heads_t_, d_p_, p_compute_t_,
      d_v_heads_, d_s_, d_s_compute_, d_s_compute_t_, d_q_heads_, d_k_heads_;
  MatMul wo_grad_mm_, bo_grad_mm_, d_context_, d_probs_, d_values_, d_queries_, d_keys_;
  GradSink wo_grad_, bo_grad_;
  dnnl::softmax_backward softmax_bwd_;
  Args softmax_bwd_args_;
  Relayout d_s_to_compute_;
};

}  // namespace

std::unique_ptr<Layer> make_multi_head_attention(const NodeSpec& node, LayerBuilder& builder) {
  return std::make_unique<MultiHeadAttention>(node, builder);
}

}  // namespace onednn
