// embedding: int32 token IDs [...] → rows of the table "embeddings" [input_dim, output_dim] (Keras's Embedding); an
// ID outside the table is an error naming the node, the position and the ID. position_embedding: adds a learned
// row per position to a sequence [T, D] (table [sequence_length, D], its first T rows used).
#include "../edge.hpp"
#include "../kernels.hpp"
#include "../weights.hpp"
#include "matmul_views.hpp"
#include "registry.hpp"

namespace onednn {
namespace {

class Embedding : public Layer {
 public:
  Embedding(const NodeSpec& node, LayerBuilder& b) : node_(node) {
    if (b.input_count() != 1) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "embedding takes one input");
    const Value& ids = b.input(0);
    if (ids.mem.get_desc().data_type() != dt::s32)
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "input '" + ids.name + "' must be int32 token IDs");
    V_ = node.attr_int("input_dim");
    D_ = node.attr_int("output_dim");
    Shape out_shape = ids.shape;
    out_shape.push_back(D_);
    b.check_shape(out_shape);
    table_ = &b.param("embeddings", {V_, D_});
    ids_ = ids.mem;
    rows_ = b.batch() * product(ids.shape);
    b.define_output(canonical_md(b.batch(), out_shape, b.compute_type()));
    out_ = &b.output();
    if (b.backward() && table_->trainable) grad_ = GradSink(b, *table_, plain_md({V_, D_}, dt::f32), plain_md({V_, D_}, dt::f32));
  }

  void forward(const Exec&) override {
    const int32_t* id = static_cast<const int32_t*>(ids_.get_data_handle());
    for (int64_t r = 0; r < rows_; ++r)
      if (id[r] < 0 || id[r] >= V_)
        node_.fail(RAMJET_ERR_OUT_OF_RANGE, "token ID " + std::to_string(id[r]) + " at position " + std::to_string(r) +
                                                " of the batch is outside the table [0, " + std::to_string(V_) + ")");
    const float* table = table_->data();
    const Elements out(out_->mem);
    const int64_t D = D_;
#pragma omp parallel for schedule(static) if (rows_ * D >= 32768)
    for (int64_t r = 0; r < rows_; ++r) {
      const float* row = table + static_cast<int64_t>(id[r]) * D;
      for (int64_t j = 0; j < D; ++j) out.set(r * D + j, row[j]);
    }
  }

  void backward(const Exec& exec) override {
    if (!grad_) return;
    const dnnl::memory target = grad_.target(exec);
    float* g = floats(target);
    zero_floats(g, static_cast<size_t>(V_ * D_));
    const int32_t* id = static_cast<const int32_t*>(ids_.get_data_handle());
    const Elements diff(read_diff(*out_));
    const int64_t D = D_;
    // Columns are split among threads, so rows that share a token never race.
#pragma omp parallel for schedule(static) if (rows_ * D >= 32768)
    for (int64_t j = 0; j < D; ++j)
      for (int64_t r = 0; r < rows_; ++r) g[static_cast<int64_t>(id[r]) * D + j] += diff.get(r * D + j);
    grad_.commit(exec);
  }

 private:
  const NodeSpec& node_;
  int64_t V_ = 0, D_ = 0, rows_ = 0;
  Param* table_ = nullptr;
  dnnl::memory ids_;
  Value* out_ = nullptr;
  GradSink grad_;
};

class PositionEmbedding : public Layer {
 public:
  PositionEmbedding(const NodeSpec& node, LayerBuilder& b) {
    if (b.input_count() != 1) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "position_embedding takes one input");
    const Shape& shape = b.input(0).shape;
    if (shape.size() != 2) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "position_embedding needs a sequence [T, D]");
    T_ = shape[0], D_ = shape[1];
    const int64_t L = node.attr_int("sequence_length");
    if (L < T_) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "sequence_length is shorter than the input");
    b.check_shape(shape);
    table_ = &b.param("embeddings", {L, D_});
    const md desc = canonical_md(b.batch(), shape, b.compute_type());
    in_ = Edge(b, b.input(0), desc);
    b.define_output(desc);
    out_ = &b.output();
    N_ = b.batch();
    if (b.backward() && table_->trainable) grad_ = GradSink(b, *table_, plain_md({L, D_}, dt::f32), plain_md({L, D_}, dt::f32));
  }

  void forward(const Exec& exec) override {
    in_.forward(exec);
    const Elements in(in_.mem()), out(out_->mem);
    const float* p = table_->data();
    const int64_t TD = T_ * D_, N = N_;
#pragma omp parallel for schedule(static) if (N * TD >= 32768)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < TD; ++i) out.set(n * TD + i, in.get(n * TD + i) + p[i]);
  }

  void backward(const Exec& exec) override {
    const dnnl::memory& diff = read_diff(*out_);
    if (in_.needs_grad()) {
      copy_memory(in_.begin_diff(), diff);
      in_.end_diff(exec);
    }
    if (!grad_) return;
    const dnnl::memory target = grad_.target(exec);
    float* g = floats(target);
    const Elements d(diff);
    const int64_t TD = T_ * D_, N = N_;
    zero_floats(g, static_cast<size_t>(table_->count()));  // rows past T get no gradient
#pragma omp parallel for schedule(static) if (N * TD >= 32768)
    for (int64_t i = 0; i < TD; ++i) {
      float s = 0.0f;
      for (int64_t n = 0; n < N; ++n) s += d.get(n * TD + i);
      g[i] = s;
    }
    grad_.commit(exec);
  }

 private:
  int64_t N_ = 0, T_ = 0, D_ = 0;
  Param* table_ = nullptr;
  Edge in_;
  Value* out_ = nullptr;
  GradSink grad_;
};

}  // namespace

std::unique_ptr<Layer> make_embedding(const NodeSpec& node, LayerBuilder& builder) {
  return std::make_unique<Embedding>(node, builder);
}
std::unique_ptr<Layer> make_position_embedding(const NodeSpec& node, LayerBuilder& builder) {
  return std::make_unique<PositionEmbedding>(node, builder);
}

}  // namespace onednn
