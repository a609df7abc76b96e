// multi_head_attention: Keras's MultiHeadAttention on sequences, inputs [query], [query, value] or [query, value,
// key]. The four projections are dense products on cuBLASLt (dense.hpp) over every row of the batch, their kernels
// [D, heads, dim] and [heads, value_dim, out] being row-major [D, heads · dim] and [heads · value_dim, out]. The
// heads are never copied apart: Q, K, V and the context O stay [N, T, heads · dim] and the per-head products read
// them through strides (sequence_kernels.hpp). Per example and head:
//   S = Q Kᵀ / sqrt(key_dim), P = softmax(S) (causal: each query sees its own and earlier positions),
//   dropout(P) in training, O = P V, out = O Wo + bo.
// Scores and probabilities are float32 in both precisions, as Keras keeps softmax in float32.
#include "../layer.hpp"
#include "../softmax.hpp"
#include "../sequence_kernels.hpp"
#include "cuda_check.hpp"
#include "dense.hpp"
#include "dropout.hpp"

#include <cmath>

namespace cuda_plugin {
namespace {

// One of the query, key and value projections.
struct Projection {
  Value* input = nullptr;
  Parameter* kernel = nullptr;
  Parameter* bias = nullptr;
  std::unique_ptr<DenseProducts> products;
  Buffer out, grad;  // [rows, heads · dim] and its gradient
};

class Attention : public Layer {
 public:
  Attention(const NodeSpec& node, Build& b)
      : device_(b.device), dtype_(b.dtype), params_(b.params), out_(b.output),
        salt_(0x9E3779B97F4A7C15ull * (node.index + 1)), step_seed_(b.step_seed) {
    const size_t count = b.inputs.size();
    if (count < 1 || count > 3) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "multi_head_attention takes 1 to 3 inputs");
    Value& q_in = *b.inputs[0];
    Value& v_in = *b.inputs[count > 1 ? 1 : 0];
    Value& k_in = *b.inputs[count > 2 ? 2 : count > 1 ? 1 : 0];
    for (const Value* v : {&q_in, &v_in, &k_in})
      if (v->shape.size() != 2) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "multi_head_attention needs sequences [T, D]");
    n_ = b.batch;
    tq_ = q_in.shape[0];
    tv_ = v_in.shape[0];
    if (k_in.shape[0] != tv_) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "key and value differ in length");
    heads_ = node.attr_int("num_heads");
    kd_ = node.attr_int("key_dim");
    vd_ = node.attr_int("value_dim", kd_);
    const int64_t out_dim = node.attr_int("output_shape", q_in.shape[1]);
    const bool use_bias = node.attr_bool("use_bias", true);
    causal_ = node.attr_bool("use_causal_mask", false);
    rate_ = static_cast<float>(node.attr_number("dropout", 0.0));
    if (heads_ < 1 || kd_ < 1 || vd_ < 1 || out_dim < 1 || !(rate_ >= 0.0f && rate_ < 1.0f))
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "num_heads, key_dim, value_dim and output_shape must be >= 1, dropout in [0, 1)");
    if (causal_ && tq_ != tv_) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "a causal mask needs query and value of one length");
    b.check_output(node, {tq_, out_dim});

    project(node, b, query_, "query", q_in, tq_, kd_, use_bias);
    project(node, b, key_, "key", k_in, tv_, kd_, use_bias);
    project(node, b, value_, "value", v_in, tv_, vd_, use_bias);
    wo_ = &weight(node, b, "attention_output/kernel", {heads_, vd_, out_dim});
    bo_ = use_bias ? &weight(node, b, "attention_output/bias", {out_dim}) : nullptr;
    output_ = std::make_unique<DenseProducts>(device_.blas(), node.name + "/attention_output", n_ * tq_, heads_ * vd_,
                                              out_dim, dtype_, bo_ ? DenseEpilogue::bias : DenseEpilogue::none,
                                              device_.settings().blas_workspace);
    const int64_t scores = n_ * heads_ * tq_ * tv_;
    const std::string what = "layer " + node.name;
    probs_ = Buffer(device_, static_cast<size_t>(scores) * sizeof(float), what + " attention probabilities");
    scores_ = Buffer(device_, static_cast<size_t>(scores) * sizeof(float), what + " attention scores");
    if (rate_ > 0.0f) dropped_ = Buffer(device_, static_cast<size_t>(scores) * sizeof(float), what + " dropped probabilities");
    context_ = b.buffer(n_ * tq_ * heads_ * vd_, what + " context");
    if (b.backward) context_grad_ = b.buffer(n_ * tq_ * heads_ * vd_, what + " context gradient");
  }

  void forward(const Pass& pass) override {
    const cudaStream_t stream = device_.stream();
    for (Projection* p : {&query_, &key_, &value_})
      p->products->forward(p->input->data.get(), params_.compute(*p->kernel), p->bias ? params_.compute(*p->bias) : nullptr,
                           p->out.get(), device_.blas_workspace(), stream);
    strided_matmul(heads_view(query_.out, kd_, tq_), heads_view_t(key_.out, kd_, tv_), scores_view(scores_), n_, heads_,
                   tq_, tv_, kd_, scale(), false, stream);
    softmax_forward(scores_.get(), probs_.get(), n_ * heads_ * tq_, tv_, CUDA_R_32F, stream, causal_ ? tq_ : 0);
    dropping_ = pass.training && rate_ > 0.0f;
    if (dropping_) dropout_forward(rate_, {step_seed_, salt_}, probs_.get(), dropped_.get(), n_ * heads_ * tq_ * tv_, CUDA_R_32F, stream);
    strided_matmul(scores_view(used()), heads_view(value_.out, vd_, tv_), heads_view(context_, vd_, tq_), n_, heads_, tq_,
                   vd_, tv_, 1.0f, false, stream);
    output_->forward(context_.get(), params_.compute(*wo_), bo_ ? params_.compute(*bo_) : nullptr, out_.data.get(),
                     device_.blas_workspace(), stream);
  }

  void backward(const Pass&) override {
    const cudaStream_t stream = device_.stream();
    const void* dout = out_.grad.get();
    output_->backward_weights(context_.get(), dout, params_.grad_target(*wo_), bo_ ? params_.grad_target(*bo_) : nullptr,
                              device_.blas_workspace(), stream);
    params_.grad_commit(*wo_);
    if (bo_) params_.grad_commit(*bo_);
    output_->backward_data(dout, params_.compute(*wo_), context_grad_.get(), device_.blas_workspace(), stream);
    // d P = d O Vᵀ (into the scores' buffer), d V = P'ᵀ d O with P' the probabilities the forward used.
    strided_matmul(heads_view(context_grad_, vd_, tq_), heads_view_t(value_.out, vd_, tv_), scores_view(scores_), n_,
                   heads_, tq_, tv_, vd_, 1.0f, false, stream);
    strided_matmul(scores_view_t(used()), heads_view(context_grad_, vd_, tq_), heads_view(value_.grad, vd_, tv_), n_,
                   heads_, tv_, vd_, tq_, 1.0f, false, stream);
    const int64_t scores = n_ * heads_ * tq_ * tv_;
    if (dropping_) dropout_backward(rate_, {step_seed_, salt_}, scores_.get(), scores_.get(), scores, CUDA_R_32F, stream);
    softmax_backward(probs_.get(), scores_.get(), scores_.get(), n_ * heads_ * tq_, tv_, CUDA_R_32F, stream);
    // d Q = d S K / sqrt(key_dim), d K = d Sᵀ Q / sqrt(key_dim).
    strided_matmul(scores_view(scores_), heads_view(key_.out, kd_, tv_), heads_view(query_.grad, kd_, tq_), n_, heads_,
                   tq_, kd_, tv_, scale(), false, stream);
    strided_matmul(scores_view_t(scores_), heads_view(query_.out, kd_, tq_), heads_view(key_.grad, kd_, tv_), n_, heads_,
                   tv_, kd_, tq_, scale(), false, stream);
    for (Projection* p : {&query_, &key_, &value_}) {
      p->products->backward_weights(p->input->data.get(), p->grad.get(), params_.grad_target(*p->kernel),
                                    p->bias ? params_.grad_target(*p->bias) : nullptr, device_.blas_workspace(), stream);
      params_.grad_commit(*p->kernel);
      if (p->bias) params_.grad_commit(*p->bias);
      if (!p->input->wants_grad) continue;
      // Self-attention reads one value three times: the first projection writes its gradient, the others add.
      p->products->backward_data(p->grad.get(), params_.compute(*p->kernel),
                                 gradient_slot(*p->input, device_, dtype_, "attention input gradient"),
                                 device_.blas_workspace(), stream);
      gradient_written(*p->input, device_, dtype_);
    }
  }

  std::vector<Parameter*> parameters() const override {
    std::vector<Parameter*> all;
    for (const Projection* p : {&query_, &key_, &value_}) {
      all.push_back(p->kernel);
      if (p->bias) all.push_back(p->bias);
    }
    all.push_back(wo_);
    if (bo_) all.push_back(bo_);
    return all;
  }

 private:
  Parameter& weight(const NodeSpec& node, Build& b, const std::string& role, const Shape& shape) {
    Parameter& p = b.params.get(node.param(role.c_str()));
    if (p.shape != shape)
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "parameter " + role + " must be " + ramjet::ir::shape_string(shape));
    return p;
  }

  void project(const NodeSpec& node, Build& b, Projection& p, const std::string& role, Value& in, int64_t length,
               int64_t dim, bool use_bias) {
    const int64_t features = in.shape[1];
    p.input = &in;
    p.kernel = &weight(node, b, role + "/kernel", {features, heads_, dim});
    p.bias = use_bias ? &weight(node, b, role + "/bias", {heads_, dim}) : nullptr;
    p.products = std::make_unique<DenseProducts>(device_.blas(), node.name + "/" + role, n_ * length, features,
                                                 heads_ * dim, dtype_, use_bias ? DenseEpilogue::bias : DenseEpilogue::none,
                                                 device_.settings().blas_workspace);
    p.out = b.buffer(n_ * length * heads_ * dim, "layer " + node.name + " " + role + " projection");
    if (b.backward) p.grad = b.buffer(n_ * length * heads_ * dim, "layer " + node.name + " " + role + " gradient");
  }

  float scale() const { return 1.0f / std::sqrt(static_cast<float>(kd_)); }
  const Buffer& used() const { return dropping_ ? dropped_ : probs_; }

  // [N, length, heads, dim] seen per (example, head) as [length, dim], or transposed as [dim, length].
  StridedMatrix heads_view(const Buffer& m, int64_t dim, int64_t length) const {
    return {m.get(), dtype_, length * heads_ * dim, dim, heads_ * dim, 1};
  }
  StridedMatrix heads_view_t(const Buffer& m, int64_t dim, int64_t length) const {
    return {m.get(), dtype_, length * heads_ * dim, dim, 1, heads_ * dim};
  }
  // [N, heads, Tq, Tv] float32 seen as [Tq, Tv], or transposed as [Tv, Tq].
  StridedMatrix scores_view(const Buffer& m) const { return {m.get(), CUDA_R_32F, heads_ * tq_ * tv_, tq_ * tv_, tv_, 1}; }
  StridedMatrix scores_view_t(const Buffer& m) const {
    return {m.get(), CUDA_R_32F, heads_ * tq_ * tv_, tq_ * tv_, 1, tv_};
  }

  Device& device_;
  cudaDataType_t dtype_;
  Parameters& params_;
  Value& out_;
  uint64_t salt_;
  int64_t n_ = 0, tq_ = 0, tv_ = 0, heads_ = 0, kd_ = 0, vd_ = 0;
  bool causal_ = false;
  float rate_ = 0.0f;
  bool dropping_ = false;
  const uint64_t* step_seed_;
  Projection query_, key_, value_;
  Parameter* wo_ = nullptr;
  Parameter* bo_ = nullptr;
  std::unique_ptr<DenseProducts> output_;
  Buffer scores_, probs_, dropped_, context_, context_grad_;
};

}  // namespace

std::unique_ptr<Layer> make_multi_head_attention(const NodeSpec& n, Build& b) { return std::make_unique<Attention>(n, b); }

}  // namespace cuda_plugin
