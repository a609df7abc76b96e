// The sequence layers (sequence_kernels.hpp): embedding (int32 token IDs to rows of a float32 table, an ID outside
// the table an error naming the node, the position and the ID, checked on the host before anything runs),
// position_embedding (a learned row per position added), rms_norm (Keras's RMSNormalization, scale float32 in both
// precisions) and matmul (two inputs [..., m, k] and [..., k, n] with equal leading axes, either transposed).
#include "../layer.hpp"
#include "../sequence_kernels.hpp"
#include "cuda_check.hpp"

#include <algorithm>

namespace cuda_plugin {
namespace {

void zero_async(void* p, size_t bytes, Device& device, const char* what) {
  check(cudaMemsetAsync(p, 0, bytes, device.stream()), "cudaMemsetAsync", what);
}

template <class T>
void upload_ids(Buffer& buffer, const std::vector<T>& values, Device& device, const std::string& what) {
  if (values.empty()) return;
  check(cudaMemcpyAsync(buffer.get(), values.data(), values.size() * sizeof(T), cudaMemcpyHostToDevice, device.stream()),
        "cudaMemcpyAsync", what);
}

Value& embedding_input(const NodeSpec& node, Build& b) {
  if (b.inputs.size() != 1) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "embedding takes one input");
  return *b.inputs[0];
}

class Embedding : public Layer {
 public:
  Embedding(const NodeSpec& node, Build& b)
      : node_(node), device_(b.device), dtype_(b.dtype), params_(b.params), ids_(embedding_input(node, b)),
        out_(b.output) {
    if (!ids_.token_ids) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "input '" + ids_.name + "' must be int32 token IDs");
    vocabulary_ = node.attr_int("input_dim");
    dim_ = node.attr_int("output_dim");
    Shape out = ids_.shape;
    out.push_back(dim_);
    b.check_output(node, out);
    table_ = &b.params.get(node.param("embeddings"));
    if (table_->shape != Shape{vocabulary_, dim_})
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "the table must be [input_dim, output_dim]");
    rows_ = ids_.elements;
    if (b.backward) {
      const std::string what = "layer " + node.name + " token order";
      tokens_ = Buffer(device_, static_cast<size_t>(rows_) * sizeof(int32_t), what);
      starts_ = Buffer(device_, static_cast<size_t>(rows_ + 1) * sizeof(int64_t), what);
      rows_of_ = Buffer(device_, static_cast<size_t>(rows_) * sizeof(int32_t), what);
    }
  }

  void forward(const Pass& pass) override {
    const std::vector<int32_t>& ids = ids_.host_ids;
    for (int64_t r = 0; r < rows_; ++r)
      if (ids[static_cast<size_t>(r)] < 0 || ids[static_cast<size_t>(r)] >= vocabulary_)
        node_.fail(RAMJET_ERR_OUT_OF_RANGE, "token ID " + std::to_string(ids[static_cast<size_t>(r)]) + " at position " +
                                                std::to_string(r) + " of the batch is outside the table [0, " +
                                                std::to_string(vocabulary_) + ")");
    embedding_forward(ids_.data.as<int32_t>(), table_->value.as<float>(), out_.data.get(), rows_, dim_, dtype_,
                      device_.stream());
    if (pass.training && tokens_.bytes() > 0) order_rows_by_token();
  }

  void backward(const Pass&) override {
    auto* target = static_cast<float*>(params_.grad_target(*table_));
    zero_async(target, static_cast<size_t>(table_->count) * sizeof(float), device_, "embedding gradient");
    embedding_backward(tokens_.as<int32_t>(), starts_.as<int64_t>(), rows_of_.as<int32_t>(), out_.grad.get(), target,
                       distinct_, dim_, dtype_, device_.stream());
    params_.grad_commit(*table_);
  }

  // The host checks every batch's token IDs and orders their rows for the backward, whose launch counts them.
  bool replayable() const override { return false; }
  std::vector<Parameter*> parameters() const override { return {table_}; }

 private:
  // The batch's rows grouped by token, in row order within a token, so each table row's gradient is one thread's
  // fixed-order sum.
  void order_rows_by_token() {
    const std::vector<int32_t>& ids = ids_.host_ids;
    order_.resize(ids.size());
    for (size_t r = 0; r < ids.size(); ++r) order_[r] = static_cast<int32_t>(r);
    std::stable_sort(order_.begin(), order_.end(), [&](int32_t a, int32_t b) { return ids[a] < ids[b]; });
    distinct_tokens_.clear();
    starts_host_.clear();
    for (size_t k = 0; k < order_.size(); ++k)
      if (k == 0 || ids[order_[k]] != ids[order_[k - 1]]) {
        distinct_tokens_.push_back(ids[order_[k]]);
        starts_host_.push_back(static_cast<int64_t>(k));
      }
    starts_host_.push_back(static_cast<int64_t>(order_.size()));
    distinct_ = static_cast<int64_t>(distinct_tokens_.size());
    upload_ids(tokens_, distinct_tokens_, device_, "embedding tokens");
    upload_ids(starts_, starts_host_, device_, "embedding token starts");
    upload_ids(rows_of_, order_, device_, "embedding rows by token");
  }

  const NodeSpec& node_;
  Device& device_;
  cudaDataType_t dtype_;
  Parameters& params_;
  Value& ids_;
  Value& out_;
  Parameter* table_ = nullptr;
  int64_t vocabulary_ = 0, dim_ = 0, rows_ = 0, distinct_ = 0;
  std::vector<int32_t> order_, distinct_tokens_;
  std::vector<int64_t> starts_host_;
  Buffer tokens_, starts_, rows_of_;
};

class PositionEmbedding : public OneInputLayer {
 public:
  PositionEmbedding(const NodeSpec& node, Build& b) : OneInputLayer(b), params_(b.params), batch_(b.batch) {
    const Shape& in = b.only_input(node, 2, "a sequence [T, D]");
    b.check_output(node, in);
    const int64_t length = node.attr_int("sequence_length");
    if (length < in[0]) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "sequence_length is shorter than the input");
    table_ = &b.params.get(node.param("embeddings"));
    if (table_->shape != Shape{length, in[1]})
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "the table must be [sequence_length, D]");
    width_ = in[0] * in[1];
  }

  void forward(const Pass&) override {
    add_rows(in_.data.get(), table_->value.as<float>(), out_.data.get(), batch_, width_, dtype_, device_.stream());
  }

  void backward(const Pass&) override {
    if (in_.wants_grad) {
      check(cudaMemcpyAsync(gradient_slot(in_, device_, dtype_, "position_embedding input gradient"), out_.grad.get(),
                            out_.grad.bytes(), cudaMemcpyDeviceToDevice, device_.stream()),
            "cudaMemcpyAsync", "position_embedding gradient");
      gradient_written(in_, device_, dtype_);
    }
    auto* target = static_cast<float*>(params_.grad_target(*table_));
    zero_async(target, static_cast<size_t>(table_->count) * sizeof(float), device_, "position table gradient");  // rows past T
    column_sums_to_float(out_.grad.get(), target, batch_, width_, dtype_, device_.stream());
    params_.grad_commit(*table_);
  }

  std::vector<Parameter*> parameters() const override { return {table_}; }

 private:
  Parameters& params_;
  int64_t batch_;
  Parameter* table_ = nullptr;
  int64_t width_ = 0;
};

class RmsNorm : public OneInputLayer {
 public:
  RmsNorm(const NodeSpec& node, Build& b) : OneInputLayer(b), params_(b.params) {
    const Shape& in = b.only_input(node, 0, "a tensor whose last axis is normalised");
    b.check_output(node, in);
    dim_ = in.back();
    rows_ = b.batch * ramjet::ir::product(in) / dim_;
    epsilon_ = static_cast<float>(node.attr_number("epsilon", 1e-6));
    scale_ = &b.params.get(node.param("scale"));
    if (scale_->shape != Shape{dim_}) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "the scale must be [" + std::to_string(dim_) + "]");
    inverse_rms_ = Buffer(device_, static_cast<size_t>(rows_) * sizeof(float), "layer " + node.name + " inverse RMS");
  }

  void forward(const Pass&) override {
    rms_norm_forward(in_.data.get(), scale_->value.as<float>(), out_.data.get(), inverse_rms_.as<float>(), rows_, dim_,
                     epsilon_, dtype_, device_.stream());
  }

  void backward(const Pass&) override {
    void* dx = in_.wants_grad ? gradient_slot(in_, device_, dtype_, "rms_norm input gradient") : nullptr;
    auto* dscale = static_cast<float*>(params_.grad_target(*scale_));
    rms_norm_backward(in_.data.get(), out_.grad.get(), scale_->value.as<float>(), inverse_rms_.as<float>(), dx, dscale,
                      rows_, dim_, dtype_, device_.stream());
    params_.grad_commit(*scale_);
    if (in_.wants_grad) gradient_written(in_, device_, dtype_);
  }

  std::vector<Parameter*> parameters() const override { return {scale_}; }

 private:
  Parameters& params_;
  Parameter* scale_ = nullptr;
  int64_t rows_ = 0, dim_ = 0;
  float epsilon_ = 1e-6f;
  Buffer inverse_rms_;
};

// A row-major [rows, cols] matrix of a batch, or its transpose, as strides.
StridedMatrix matrix_view(void* data, cudaDataType_t dtype, int64_t rows, int64_t cols, bool transposed) {
  const int64_t each = rows * cols;
  return transposed ? StridedMatrix{data, dtype, each, 0, 1, cols} : StridedMatrix{data, dtype, each, 0, cols, 1};
}

StridedMatrix transposed_view(StridedMatrix m) {
  std::swap(m.row, m.col);
  return m;
}

Value& matmul_input(const NodeSpec& node, Build& b, size_t i) {
  if (b.inputs.size() != 2) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "matmul takes exactly two inputs");
  return *b.inputs[i];
}

// C = op(A) op(B); d op(A) = dC op(B)ᵀ and d op(B) = op(A)ᵀ dC, each written through op's own view of the
// gradient's storage, so a transposed input gets its gradient transposed back.
class Matmul : public Layer {
 public:
  Matmul(const NodeSpec& node, Build& b)
      : device_(b.device), dtype_(b.dtype), a_(matmul_input(node, b, 0)), b_(matmul_input(node, b, 1)),
        out_(b.output) {
    ta_ = node.attr_bool("transpose_a", false);
    tb_ = node.attr_bool("transpose_b", false);
    const Shape &sa = a_.shape, &sb = b_.shape;
    if (sa.size() < 2 || sa.size() != sb.size() || !std::equal(sa.begin(), sa.end() - 2, sb.begin()))
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "matmul needs inputs of rank 2 or more with equal leading axes");
    const size_t r = sa.size();
    m_ = ta_ ? sa[r - 1] : sa[r - 2];
    k_ = ta_ ? sa[r - 2] : sa[r - 1];
    const int64_t k2 = tb_ ? sb[r - 1] : sb[r - 2];
    n_ = tb_ ? sb[r - 2] : sb[r - 1];
    if (k_ != k2) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "matmul's inner dimensions differ");
    Shape out(sa.begin(), sa.end() - 2);
    out.push_back(m_);
    out.push_back(n_);
    b.check_output(node, out);
    batches_ = b.batch * ramjet::ir::product(Shape(sa.begin(), sa.end() - 2));
  }

  void forward(const Pass&) override {
    strided_matmul(op_a(a_.data.get()), op_b(b_.data.get()), matrix_view(out_.data.get(), dtype_, m_, n_, false), batches_, 1,
                   m_, n_, k_, 1.0f, false, device_.stream());
  }

  void backward(const Pass&) override {
    const StridedMatrix dc = matrix_view(out_.grad.get(), dtype_, m_, n_, false);
    if (a_.wants_grad) {
      const StridedMatrix da = op_a(gradient_slot(a_, device_, dtype_, "matmul input gradient"));
      strided_matmul(dc, transposed_view(op_b(b_.data.get())), da, batches_, 1, m_, k_, n_, 1.0f, false, device_.stream());
      gradient_written(a_, device_, dtype_);
    }
    if (b_.wants_grad) {
      const StridedMatrix db = op_b(gradient_slot(b_, device_, dtype_, "matmul input gradient"));
      strided_matmul(transposed_view(op_a(a_.data.get())), dc, db, batches_, 1, k_, n_, m_, 1.0f, false, device_.stream());
      gradient_written(b_, device_, dtype_);
    }
  }

 private:
  // op(A) [m, k]: A stored [m, k], or [k, m] when transposed; op(B) [k, n] likewise.
  StridedMatrix op_a(void* data) const { return ta_ ? matrix_view(data, dtype_, k_, m_, true) : matrix_view(data, dtype_, m_, k_, false); }
  StridedMatrix op_b(void* data) const { return tb_ ? matrix_view(data, dtype_, n_, k_, true) : matrix_view(data, dtype_, k_, n_, false); }

  Device& device_;
  cudaDataType_t dtype_;
  Value& a_;
  Value& b_;
  Value& out_;
  bool ta_ = false, tb_ = false;
  int64_t m_ = 0, n_ = 0, k_ = 0, batches_ = 0;
};

}  // namespace

std::unique_ptr<Layer> make_embedding(const NodeSpec& n, Build& b) { return std::make_unique<Embedding>(n, b); }
std::unique_ptr<Layer> make_position_embedding(const NodeSpec& n, Build& b) {
  return std::make_unique<PositionEmbedding>(n, b);
}
std::unique_ptr<Layer> make_rms_norm(const NodeSpec& n, Build& b) { return std::make_unique<RmsNorm>(n, b); }
std::unique_ptr<Layer> make_matmul(const NodeSpec& n, Build& b) { return std::make_unique<Matmul>(n, b); }

}  // namespace cuda_plugin
