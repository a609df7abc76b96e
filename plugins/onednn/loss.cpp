#include "loss.hpp"

#include "layout.hpp"

#include <cmath>

namespace onednn {

bool is_supported_loss(std::string_view op) {
  return op == "sparse_softmax_cross_entropy" || op == "mse" || op == "l1";
}

Loss::Loss(const LossSpec& spec, LayerBuilder& b, Value& input) : spec_(spec) {
  kind_ = spec.op == "sparse_softmax_cross_entropy" ? Kind::cross_entropy : spec.op == "mse" ? Kind::mse : Kind::l1;
  if (kind_ == Kind::cross_entropy && input.shape.size() != 1)
    fail(RAMJET_ERR_INVALID_ARGUMENT, "graph: #/loss: sparse_softmax_cross_entropy needs logits of shape [classes], "
                                      "but '" + input.name + "' has shape " + shape_string(input.shape));
  batch_ = b.batch();
  width_ = product(input.shape);
  in_ = Edge(b, input, canonical_md(batch_, input.shape));
  if (kind_ == Kind::cross_entropy) {
    classes_.resize(static_cast<size_t>(batch_));
    probs_.resize(static_cast<size_t>(batch_ * width_));
  } else {
    targets_.resize(static_cast<size_t>(batch_ * width_));
  }
}

// Runs every step: messages are built only on failure.
void Loss::take_labels(const DLTensor& t) {
  auto bad = [&](ramjet_status status, const std::string& why) {
    fail(status, "forward: labels '" + spec_.labels + "' " + why);
  };
  if (t.device.device_type != kDLCPU || !ramjet::is_contiguous(t))
    bad(RAMJET_ERR_INVALID_ARGUMENT, "must be a contiguous CPU tensor");
  if (t.ndim < 1 || t.shape[0] != batch_)
    bad(RAMJET_ERR_INVALID_ARGUMENT, "must have the batch (" + std::to_string(batch_) + ") as first dimension");
  if (kind_ == Kind::cross_entropy) {
    if (!ramjet::same_dtype(t.dtype, ramjet::dtype_of<int32_t>()))
      bad(RAMJET_ERR_INVALID_ARGUMENT, "has dtype " + ramjet::dtype_name(t.dtype) + "; class labels are int32");
    if (ramjet::element_count(t) != batch_) bad(RAMJET_ERR_INVALID_ARGUMENT, "must hold one class per example ([N])");
    const int32_t* x = ramjet::data_as<int32_t>(const_cast<DLTensor&>(t));
    for (int64_t i = 0; i < batch_; ++i) {
      if (x[i] < 0 || x[i] >= width_)
        bad(RAMJET_ERR_OUT_OF_RANGE, "[" + std::to_string(i) + "] = " + std::to_string(x[i]) + " is outside [0, " +
                                         std::to_string(width_) + ")");
      classes_[static_cast<size_t>(i)] = x[i];
    }
  } else {
    if (!ramjet::same_dtype(t.dtype, ramjet::dtype_of<float>()))
      bad(RAMJET_ERR_INVALID_ARGUMENT, "has dtype " + ramjet::dtype_name(t.dtype) + "; " + spec_.op +
                                           " targets are float32");
    if (ramjet::element_count(t) != batch_ * width_)
      bad(RAMJET_ERR_INVALID_ARGUMENT, "must have the shape of '" + spec_.input + "' ([N, ...])");
    const float* x = ramjet::data_as<float>(const_cast<DLTensor&>(t));
    std::copy(x, x + batch_ * width_, targets_.begin());
  }
}

void Loss::forward(const Exec& exec, const DLTensor& labels, float& loss, int32_t& correct) {
  take_labels(labels);
  in_.forward(exec);
  exec.stream.wait();  // the loops below read what the primitives wrote
  const float* x = floats(in_.mem());
  const int64_t n = batch_, k = width_;
  double total = 0.0;
  int64_t hits = 0;
  if (kind_ == Kind::cross_entropy) {
#pragma omp parallel for reduction(+ : total, hits) if (n * k >= 4096)
    for (int64_t i = 0; i < n; ++i) {
      const float* row = x + i * k;
      float* p = probs_.data() + i * k;
      int64_t best = 0;
      for (int64_t j = 1; j < k; ++j)
        if (row[j] > row[best]) best = j;
      double sum = 0.0;
      for (int64_t j = 0; j < k; ++j) sum += std::exp(static_cast<double>(row[j] - row[best]));
      const double lse = static_cast<double>(row[best]) + std::log(sum);
      for (int64_t j = 0; j < k; ++j) p[j] = static_cast<float>(std::exp(static_cast<double>(row[j]) - lse));
      const int32_t label = classes_[static_cast<size_t>(i)];
      total += lse - static_cast<double>(row[label]);
      hits += best == label;
    }
    loss = static_cast<float>(total / static_cast<double>(n));
  } else {
    const int64_t m = n * k;
    const float* y = targets_.data();
#pragma omp parallel for reduction(+ : total) if (m >= 32768)
    for (int64_t i = 0; i < m; ++i) {
      const double d = static_cast<double>(x[i]) - static_cast<double>(y[i]);
      total += kind_ == Kind::mse ? d * d : std::fabs(d);
    }
    loss = static_cast<float>(total / static_cast<double>(m));
  }
  correct = static_cast<int32_t>(hits);
}

void Loss::backward(const Exec& exec, float scale) {
  if (!in_.needs_grad()) return;
  float* d = floats(in_.begin_diff());
  const float* x = floats(in_.mem());
  const int64_t n = batch_, k = width_, m = n * k;
  if (kind_ == Kind::cross_entropy) {
    const float s = scale / static_cast<float>(n);
#pragma omp parallel for if (m >= 32768)
    for (int64_t i = 0; i < n; ++i) {
      const float* p = probs_.data() + i * k;
      for (int64_t j = 0; j < k; ++j) d[i * k + j] = p[j] * s;
      d[i * k + classes_[static_cast<size_t>(i)]] -= s;
    }
  } else {
    const float s = scale / static_cast<float>(m);
    const float* y = targets_.data();
    const bool squared = kind_ == Kind::mse;
#pragma omp parallel for simd if (m >= 32768)
    for (int64_t i = 0; i < m; ++i) {
      const float diff = x[i] - y[i];
      d[i] = squared ? 2.0f * s * diff : (diff > 0.0f ? s : diff < 0.0f ? -s : 0.0f);
    }
  }
  in_.end_diff(exec);
}

}  // namespace onednn
