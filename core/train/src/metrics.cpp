#include "ramjet/train/metrics.hpp"

#include "ramjet/plugin/failure.hpp"
#include "ramjet/plugin/tensor.hpp"

#include <algorithm>
#include <cmath>

namespace ramjet::core {

class MetricSet::Metric {
 public:
  explicit Metric(std::string name) : name_(std::move(name)) {}
  virtual ~Metric() = default;
  const std::string& name() const { return name_; }
  virtual void add(const DLTensor& output, const DLTensor& labels, const std::string& where) = 0;
  virtual void add_counted(int64_t, int64_t) {}
  double value() const { return count_ > 0 ? sum_ / static_cast<double>(count_) : 0.0; }

 protected:
  double sum_ = 0;
  int64_t count_ = 0;

 private:
  std::string name_;
};

namespace {

using Metric = MetricSet::Metric;

bool is_f32(const DLTensor& t) { return t.dtype.code == kDLFloat && t.dtype.bits == 32 && t.dtype.lanes == 1; }
int64_t per_example(const DLTensor& t) {
  int64_t n = 1;
  for (int d = 1; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}
std::string shape_of(const DLTensor& t) {
  std::string s = "[";
  for (int d = 0; d < t.ndim; ++d) s += (d ? ", " : "") + std::to_string(t.shape[d]);
  return s + "]";
}

int64_t class_at(const DLTensor& labels, int64_t i) {
  const void* p = first_byte(labels);
  if (labels.dtype.code == kDLInt && labels.dtype.bits == 32) return static_cast<const int32_t*>(p)[i];
  if (labels.dtype.code == kDLInt && labels.dtype.bits == 64) return static_cast<const int64_t*>(p)[i];
  if (labels.dtype.code == kDLUInt && labels.dtype.bits == 8) return static_cast<const uint8_t*>(p)[i];
  return -1;
}

// The class of example i: an index, or the hottest entry of a one-hot (categorical) row.
int64_t label_class(const DLTensor& labels, int64_t i, const std::string& where) {
  if (is_f32(labels) && labels.ndim == 2) {
    const int64_t k = labels.shape[1];
    const float* row = static_cast<const float*>(first_byte(labels)) + i * k;
    return std::max_element(row, row + k) - row;
  }
  const int64_t c = labels.ndim == 1 ? class_at(labels, i) : -1;
  if (c < 0 && labels.ndim != 1)
    throw RuntimeFailure(where + ": accuracy needs one class per example, and the labels are " + shape_of(labels));
  if (c < 0 && labels.dtype.code == kDLFloat)
    throw RuntimeFailure(where + ": accuracy needs int32, int64 or uint8 class indices or one-hot rows");
  return c;
}

void require_rows(const DLTensor& output, const std::string& name, const std::string& where) {
  if (!is_f32(output) || output.ndim != 2)
    throw RuntimeFailure(where + ": " + name + " scores a float32 [batch, classes] output, and it is " + shape_of(output));
}

class TopK : public Metric {
 public:
  TopK(std::string name, int64_t k) : Metric(std::move(name)), k_(k) {}
  void add(const DLTensor& output, const DLTensor& labels, const std::string& where) override {
    require_rows(output, name(), where);
    const int64_t n = output.shape[0], classes = output.shape[1];
    const float* logits = static_cast<const float*>(first_byte(output));
    for (int64_t i = 0; i < n; ++i) {
      const float* row = logits + i * classes;
      const int64_t label = label_class(labels, i, where);
      if (label < 0 || label >= classes) {  // an out-of-range label is a miss, as Keras scores it
        ++count_;
        continue;
      }
      sum_ += in_top_k(row, classes, label) ? 1.0 : 0.0;
      ++count_;
    }
  }
  void add_counted(int64_t correct, int64_t positions) override {
    sum_ += static_cast<double>(correct);
    count_ += positions;
  }

 private:
  // Top-1 is the first highest logit (argmax); top-k holds when fewer than k classes score strictly higher than the
  // label (ties count for the label, as tf.math.in_top_k).
  bool in_top_k(const float* row, int64_t classes, int64_t label) const {
    if (k_ == 1) return std::max_element(row, row + classes) - row == label;
    int64_t higher = 0;
    for (int64_t c = 0; c < classes && higher < k_; ++c) higher += row[c] > row[label];
    return higher < k_;
  }

  int64_t k_;
};

// A metric of (output, target) pairs of equal shapes, one value per example.
class PerExample : public Metric {
 public:
  using Metric::Metric;
  void add(const DLTensor& output, const DLTensor& labels, const std::string& where) override {
    if (!is_f32(output) || !is_f32(labels) || output.ndim != labels.ndim ||
        !std::equal(output.shape, output.shape + output.ndim, labels.shape))
      throw RuntimeFailure(where + ": " + name() + " compares float32 outputs with float32 targets of the same shape; the "
                                   "output is " + shape_of(output) + " and the labels " + shape_of(labels));
    const int64_t n = output.shape[0], m = per_example(output);
    const float* y = static_cast<const float*>(first_byte(output));
    const float* t = static_cast<const float*>(first_byte(labels));
    for (int64_t i = 0; i < n; ++i) {
      sum_ += score(y + i * m, t + i * m, m, output);
      ++count_;
    }
  }

 protected:
  virtual double score(const float* y, const float* t, int64_t m, const DLTensor& output) const = 0;
};

class MeanError : public PerExample {
 public:
  MeanError(std::string name, bool squared) : PerExample(std::move(name)), squared_(squared) {}
  double score(const float* y, const float* t, int64_t m, const DLTensor&) const override {
    double s = 0;
    for (int64_t j = 0; j < m; ++j) {
      const double d = static_cast<double>(y[j]) - static_cast<double>(t[j]);
      s += squared_ ? d * d : std::fabs(d);
    }
    return s / static_cast<double>(m);
  }

 private:
  bool squared_;
};

// An example equal to its target has an infinite PSNR; it counts as 100 dB so that the mean stays a number.
constexpr double kPsnrCeiling = 100.0;

class Psnr : public PerExample {
 public:
  Psnr(std::string name, double max_val) : PerExample(std::move(name)), max_val_(max_val) {}
  double score(const float* y, const float* t, int64_t m, const DLTensor&) const override {
    double s = 0;
    for (int64_t j = 0; j < m; ++j) {
      const double d = static_cast<double>(y[j]) - static_cast<double>(t[j]);
      s += d * d;
    }
    const double mse = s / static_cast<double>(m);
    if (mse <= 0) return kPsnrCeiling;
    return std::min(kPsnrCeiling, 10.0 * std::log10(max_val_ * max_val_ / mse));
  }

 private:
  double max_val_;
};

// tf.image.ssim: a Gaussian window (normalized, separable) over VALID positions, per channel, averaged over the
// positions and the channels.
class Ssim : public PerExample {
 public:
  Ssim(std::string name, const nlohmann::json& spec) : PerExample(std::move(name)) {
    const int64_t size = spec.at("filter_size").get<int64_t>();
    const double sigma = spec.at("filter_sigma").get<double>();
    const double max_val = spec.at("max_val").get<double>();
    c1_ = std::pow(spec.at("k1").get<double>() * max_val, 2);
    c2_ = std::pow(spec.at("k2").get<double>() * max_val, 2);
    double total = 0;
    for (int64_t i = 0; i < size; ++i) {
      const double x = static_cast<double>(i) - static_cast<double>(size - 1) / 2;
      window_.push_back(std::exp(-x * x / (2 * sigma * sigma)));
      total += window_.back();
    }
    for (double& w : window_) w /= total;
  }

  double score(const float* y, const float* t, int64_t, const DLTensor& output) const override {
    const int64_t h = output.shape[1], w = output.shape[2], c = output.shape[3];
    const int64_t s = static_cast<int64_t>(window_.size()), oh = h - s + 1, ow = w - s + 1;
    if (output.ndim != 4 || oh < 1 || ow < 1)
      throw RuntimeFailure(name() + ": the output " + shape_of(output) + " is smaller than the window");
    double total = 0;
    // Five filtered planes per channel: E[x], E[y], E[x²], E[y²], E[xy]; rows first, then columns.
    std::vector<double> rows(static_cast<size_t>(5 * h * ow));
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t r = 0; r < h; ++r)
        for (int64_t q = 0; q < ow; ++q) {
          double m[5] = {0, 0, 0, 0, 0};
          for (int64_t k = 0; k < s; ++k) {
            const int64_t at = (r * w + q + k) * c + ch;
            const double a = y[at], b = t[at], g = window_[static_cast<size_t>(k)];
            m[0] += g * a, m[1] += g * b, m[2] += g * a * a, m[3] += g * b * b, m[4] += g * a * b;
          }
          for (int p = 0; p < 5; ++p) rows[static_cast<size_t>((p * h + r) * ow + q)] = m[p];
        }
      for (int64_t r = 0; r < oh; ++r)
        for (int64_t q = 0; q < ow; ++q) {
          double m[5] = {0, 0, 0, 0, 0};
          for (int64_t k = 0; k < s; ++k)
            for (int p = 0; p < 5; ++p) m[p] += window_[static_cast<size_t>(k)] * rows[static_cast<size_t>((p * h + r + k) * ow + q)];
          const double mx = m[0], my = m[1];
          const double luminance = (2 * mx * my + c1_) / (mx * mx + my * my + c1_);
          const double contrast = (2 * (m[4] - mx * my) + c2_) / ((m[2] - mx * mx) + (m[3] - my * my) + c2_);
          total += luminance * contrast;
        }
    }
    return total / static_cast<double>(oh * ow * c);
  }

 private:
  std::vector<double> window_;
  double c1_ = 0, c2_ = 0;
};

std::unique_ptr<Metric> make_metric(const nlohmann::json& spec) {
  const std::string type = spec.at("type").get<std::string>();
  const std::string name = spec.at("name").get<std::string>();
  if (type == "accuracy") return std::make_unique<TopK>(name, 1);
  if (type == "top_k_accuracy") return std::make_unique<TopK>(name, spec.at("k").get<int64_t>());
  if (type == "mae") return std::make_unique<MeanError>(name, false);
  if (type == "mse") return std::make_unique<MeanError>(name, true);
  if (type == "psnr") return std::make_unique<Psnr>(name, spec.at("max_val").get<double>());
  if (type == "ssim") return std::make_unique<Ssim>(name, spec);
  throw RuntimeFailure("the graph names an unknown metric '" + type + "'");
}

}  // namespace

bool metric_is_maximized(const std::string& name) {
  const std::string bare = name.rfind("val_", 0) == 0 ? name.substr(4) : name;
  return bare.find("accuracy") != std::string::npos || bare == "psnr" || bare == "ssim";
}

MetricSet::MetricSet(const nlohmann::json& specs) {
  for (const auto& spec : specs) metrics_.push_back(make_metric(spec));
}
MetricSet::~MetricSet() = default;
MetricSet::MetricSet(MetricSet&&) noexcept = default;

void MetricSet::add(const DLTensor& output, const DLTensor& labels, const std::string& where) {
  if (labels.ndim < 1 || output.ndim < 1 || labels.shape[0] != output.shape[0])
    throw RuntimeFailure(where + ": the output " + shape_of(output) + " and the labels " + shape_of(labels) +
                         " have different batch sizes");
  for (auto& m : metrics_) m->add(output, labels, where);
}

void MetricSet::add_counted(int64_t correct, int64_t positions) {
  for (auto& m : metrics_) m->add_counted(correct, positions);
}

MetricValues MetricSet::values() const {
  MetricValues out;
  for (const auto& m : metrics_) out.emplace_back(m->name(), m->value());
  return out;
}

void top_classes(const float* logits, int64_t n, int64_t k, std::vector<int32_t>& out) {
  for (int64_t i = 0; i < n; ++i) {
    const float* row = logits + i * k;
    out.push_back(static_cast<int32_t>(std::max_element(row, row + k) - row));
  }
}

}  // namespace ramjet::core
