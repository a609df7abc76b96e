#include "loss.hpp"

#include "layout.hpp"

#include <cmath>

namespace onednn {

std::vector<std::string> supported_losses() {
  return {"sparse_softmax_cross_entropy", "categorical_cross_entropy", "binary_cross_entropy", "mse", "l1"};
}

Loss::Loss(const LossSpec& spec, LayerBuilder& b, Value& input) : spec_(spec) {
  kind_ = spec.op == "sparse_softmax_cross_entropy" ? Kind::sparse
          : spec.op == "categorical_cross_entropy"  ? Kind::categorical
          : spec.op == "binary_cross_entropy"        ? Kind::binary
          : spec.op == "mse"                         ? Kind::mse
                                                     : Kind::l1;
  if ((kind_ == Kind::sparse || kind_ == Kind::categorical) && input.shape.empty())
    fail(RAMJET_ERR_INVALID_ARGUMENT, "graph: #/loss: " + spec.op + " needs logits [..., classes], but '" + input.name +
                                          "' has shape " + shape_string(input.shape));
  batch_ = b.batch();
  elements_ = batch_ * product(input.shape);
  classes_ = input.shape.back();
  rows_ = elements_ / classes_;
  in_ = Edge(b, input, canonical_md(batch_, input.shape));
  if (kind_ == Kind::sparse) labels_.resize(static_cast<size_t>(rows_));
  else targets_.resize(static_cast<size_t>(elements_));
  if (kind_ == Kind::sparse || kind_ == Kind::categorical || kind_ == Kind::binary)
    probs_.resize(static_cast<size_t>(elements_));
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
  if (kind_ == Kind::sparse) {
    if (!ramjet::same_dtype(t.dtype, ramjet::dtype_of<int32_t>()))
      bad(RAMJET_ERR_INVALID_ARGUMENT, "has dtype " + ramjet::dtype_name(t.dtype) + "; class labels are int32");
    if (ramjet::element_count(t) != rows_)
      bad(RAMJET_ERR_INVALID_ARGUMENT, "must hold one class per position (" + std::to_string(rows_) + " in all, the "
                                       "logits' shape without its last axis)");
    const int32_t* x = ramjet::data_as<int32_t>(const_cast<DLTensor&>(t));
    for (int64_t i = 0; i < rows_; ++i) {
      const bool ignored = spec_.ignore_label && x[i] == *spec_.ignore_label;
      if (!ignored && (x[i] < 0 || x[i] >= classes_))
        bad(RAMJET_ERR_OUT_OF_RANGE, "[" + std::to_string(i) + "] = " + std::to_string(x[i]) + " is outside [0, " +
                                         std::to_string(classes_) + ")");
      labels_[static_cast<size_t>(i)] = ignored ? -1 : x[i];
    }
  } else {
    if (!ramjet::same_dtype(t.dtype, ramjet::dtype_of<float>()))
      bad(RAMJET_ERR_INVALID_ARGUMENT, "has dtype " + ramjet::dtype_name(t.dtype) + "; " + spec_.op +
                                           " targets are float32");
    if (ramjet::element_count(t) != elements_)
      bad(RAMJET_ERR_INVALID_ARGUMENT, "must have the shape of '" + spec_.input + "' ([N, ...])");
    const float* x = ramjet::data_as<float>(const_cast<DLTensor&>(t));
    std::copy(x, x + elements_, targets_.begin());
  }
}

// Softmax cross-entropy per position: keeps the probabilities, returns the mean over counted positions.
float Loss::classes_forward(const float* x, int64_t& hits) {
  const int64_t k = classes_;
  const double eps = spec_.label_smoothing;
  double total = 0.0;
  int64_t counted = 0, right = 0;
#pragma omp parallel for reduction(+ : total, counted, right) if (rows_ * k >= 4096)
  for (int64_t i = 0; i < rows_; ++i) {
    const float* row = x + i * k;
    float* p = probs_.data() + i * k;
    int64_t best = 0;
    for (int64_t j = 1; j < k; ++j)
      if (row[j] > row[best]) best = j;
    // One exponential per logit, in float (they lie in (0, 1] after the shift), kept as the probabilities: a language
    // model's step has vocabulary × tokens of them (114 × 4096 for the example), where a double exp and a second
    // pass had shown in the profile.
    const float top = row[best];
    float sum = 0.0f;
    for (int64_t j = 0; j < k; ++j) sum += (p[j] = std::exp(row[j] - top));
    const float inverse = 1.0f / sum;
    for (int64_t j = 0; j < k; ++j) p[j] *= inverse;
    const double lse = static_cast<double>(top) + std::log(static_cast<double>(sum));
    if (kind_ == Kind::sparse) {
      const int32_t label = labels_[static_cast<size_t>(i)];
      if (label < 0) continue;  // ignore_label
      double smooth = 0.0;
      if (eps > 0.0)
        for (int64_t j = 0; j < k; ++j) smooth += lse - static_cast<double>(row[j]);
      total += (1.0 - eps) * (lse - static_cast<double>(row[label])) + eps * smooth / static_cast<double>(k);
      right += best == label;
    } else {
      const float* y = targets_.data() + i * k;
      int64_t wanted = 0;
      for (int64_t j = 0; j < k; ++j) {
        const double target = (1.0 - eps) * y[j] + eps / static_cast<double>(k);
        total += target * (lse - static_cast<double>(row[j]));
        if (y[j] > y[wanted]) wanted = j;
      }
      right += best == wanted;
    }
    ++counted;
  }
  counted_ = counted;
  hits = right;
  return counted > 0 ? static_cast<float>(total / static_cast<double>(counted)) : 0.0f;
}

// binary cross-entropy from logits, mse and l1: per element, averaged over every element.
float Loss::elementwise_forward(const float* x, int64_t& hits) {
  const int64_t m = elements_;
  const float* y = targets_.data();
  double total = 0.0;
  int64_t right = 0;
  if (kind_ == Kind::binary) {
#pragma omp parallel for reduction(+ : total, right) if (m >= 32768)
    for (int64_t i = 0; i < m; ++i) {
      const double z = x[i], t = y[i];
      // max(z, 0) − z t + log(1 + e^−|z|): the stable form, as TensorFlow's sigmoid_cross_entropy_with_logits.
      total += std::max(z, 0.0) - z * t + std::log1p(std::exp(-std::fabs(z)));
      probs_[static_cast<size_t>(i)] = static_cast<float>(1.0 / (1.0 + std::exp(-z)));
      right += (z > 0.0) == (t > 0.5);
    }
  } else {
#pragma omp parallel for reduction(+ : total) if (m >= 32768)
    for (int64_t i = 0; i < m; ++i) {
      const double d = static_cast<double>(x[i]) - static_cast<double>(y[i]);
      total += kind_ == Kind::mse ? d * d : std::fabs(d);
    }
  }
  counted_ = m;
  hits = right;
  return static_cast<float>(total / static_cast<double>(m));
}

void Loss::forward(const Exec& exec, const DLTensor& labels, float& loss, int32_t& correct, int32_t& counted) {
  take_labels(labels);
  in_.forward(exec);
  exec.stream.wait();  // the loops below read what the primitives wrote
  const float* x = floats(in_.mem());
  int64_t hits = 0;
  loss = kind_ == Kind::sparse || kind_ == Kind::categorical ? classes_forward(x, hits) : elementwise_forward(x, hits);
  correct = static_cast<int32_t>(hits);
  counted = static_cast<int32_t>(counted_);
}

void Loss::backward(const Exec& exec, float scale) {
  if (!in_.needs_grad()) return;
  float* d = floats(in_.begin_diff());
  const float* x = floats(in_.mem());
  const int64_t m = elements_, k = classes_;
  if (kind_ == Kind::sparse || kind_ == Kind::categorical) {
    const float s = counted_ > 0 ? scale / static_cast<float>(counted_) : 0.0f;
    const float eps = static_cast<float>(spec_.label_smoothing), uniform = eps / static_cast<float>(k);
#pragma omp parallel for if (m >= 32768)
    for (int64_t i = 0; i < rows_; ++i) {
      const float* p = probs_.data() + i * k;
      float* g = d + i * k;
      if (kind_ == Kind::sparse) {
        const int32_t label = labels_[static_cast<size_t>(i)];
        if (label < 0) {
          for (int64_t j = 0; j < k; ++j) g[j] = 0.0f;
          continue;
        }
        for (int64_t j = 0; j < k; ++j) g[j] = (p[j] - uniform) * s;
        g[label] -= (1.0f - eps) * s;
      } else {
        // d/dz_j of −Σ y'_k log p_k is p_j Σ y'_k − y'_j: targets need not sum to one (Keras does not ask it).
        const float* y = targets_.data() + i * k;
        float total = 0.0f;
        for (int64_t j = 0; j < k; ++j) total += (1.0f - eps) * y[j] + uniform;
        for (int64_t j = 0; j < k; ++j) g[j] = (p[j] * total - ((1.0f - eps) * y[j] + uniform)) * s;
      }
    }
  } else {
    const float s = scale / static_cast<float>(m);
    const float* y = targets_.data();
    const Kind kind = kind_;
#pragma omp parallel for simd if (m >= 32768)
    for (int64_t i = 0; i < m; ++i) {
      const float diff = x[i] - y[i];
      d[i] = kind == Kind::binary ? (probs_[static_cast<size_t>(i)] - y[i]) * s
             : kind == Kind::mse  ? 2.0f * s * diff
                                  : (diff > 0.0f ? s : diff < 0.0f ? -s : 0.0f);
    }
  }
  in_.end_diff(exec);
}

}  // namespace onednn
