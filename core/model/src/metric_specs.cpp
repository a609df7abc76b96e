#include "metric_specs.hpp"

#include "layer_site.hpp"
#include "ramjet/plugin/failure.hpp"

#include <ramjet/sdk/fields.hpp>

#include <set>

namespace ramjet::core::model_rules {
namespace {

// What a metric compares the output with.
enum class Task { classes, values };

struct MetricKind {
  Task task;
  std::set<std::string> options;  // besides "type"
};

const std::map<std::string, MetricKind>& kinds() {
  static const std::map<std::string, MetricKind> k = {
      {"accuracy", {Task::classes, {}}},
      {"top_k_accuracy", {Task::classes, {"k"}}},
      {"mae", {Task::values, {}}},
      {"mse", {Task::values, {}}},
      {"psnr", {Task::values, {"max_val"}}},
      {"ssim", {Task::values, {"max_val", "filter_size", "filter_sigma", "k1", "k2"}}},
  };
  return k;
}

std::string kind_names() {
  std::string out;
  for (const auto& [name, kind] : kinds()) out += (out.empty() ? "" : ", ") + name;
  return out;
}

class MetricReader {
 public:
  MetricReader(const json& loss, const Shape& output, const Origin& origin)
      : loss_(loss), output_(output), origin_(origin) {}

  json read(const json& item, const std::string& p) const {
    const bool object = item.is_object();
    const json& type = object ? (item.contains("type") ? item["type"] : json()) : item;
    const std::string tp = object ? p + "/type" : p;
    if (!type.is_string()) fail(tp, "a metric is a name or an object with a \"type\" (" + kind_names() + ")");
    const std::string name = type;
    auto kind = kinds().find(name);
    if (kind == kinds().end()) fail(tp, "unknown metric '" + name + "' (" + kind_names() + ")");
    json spec = {{"type", name}, {"name", name}};
    if (object)
      for (const auto& [key, value] : item.items())
        if (key != "type" && !kind->second.options.count(key))
          fail(p + "/" + key, "unknown field for a " + name + " metric");
    check_task(kind->second.task, name, tp);
    if (name == "top_k_accuracy") {
      const int64_t k = integer(item, "k", 5, p);
      if (k < 1 || (!output_.empty() && k > output_.back()))
        fail(p + "/k", "must be in [1, " + std::to_string(output_.empty() ? 1 : output_.back()) + "] (the classes), got " +
                           std::to_string(k));
      spec["k"] = k;
      spec["name"] = "top_" + std::to_string(k) + "_accuracy";
    }
    if (name == "psnr" || name == "ssim") spec["max_val"] = positive(item, "max_val", 1.0, p);
    if (name == "ssim") read_ssim(item, p, spec);
    return spec;
  }

  // Keras's defaults are none; ramjet's are what a user of the loss reads first: accuracy for classes, the mean
  // absolute error for values, and PSNR as well when the output is an image.
  json chosen_by_loss() const {
    json out = json::array();
    if (loss_.is_null()) {
      if (output_.size() == 1) out.push_back({{"type", "accuracy"}, {"name", "accuracy"}});
      return out;
    }
    if (classification()) out.push_back({{"type", "accuracy"}, {"name", "accuracy"}});
    else if (regression()) {
      out.push_back({{"type", "mae"}, {"name", "mae"}});
      if (output_.size() == 3) out.push_back({{"type", "psnr"}, {"name", "psnr"}, {"max_val", 1.0}});
    }
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& pointer, const std::string& message) const {
    throw ManifestError(origin_.where(pointer), pointer, message);
  }
  std::string loss_type() const { return loss_.is_null() ? "" : loss_.value("op", std::string()); }
  bool classification() const {
    return loss_type() == "sparse_softmax_cross_entropy" || loss_type() == "categorical_cross_entropy";
  }
  bool regression() const { return loss_type() == "mse" || loss_type() == "l1"; }

  void check_task(Task task, const std::string& name, const std::string& p) const {
    if (task == Task::classes) {
      if (loss_.is_null() ? output_.size() != 1 : !classification())
        fail(p, name + " scores classes: it needs a sparse_softmax_cross_entropy or categorical_cross_entropy loss (or no "
                       "loss and an output of [classes]), and the loss is " +
                    (loss_.is_null() ? "absent with an output of " + shape_text(output_) : loss_type()));
      if (name == "top_k_accuracy" && output_.size() != 1)
        fail(p, "top_k_accuracy scores one [classes] output per example, and the output is " + shape_text(output_));
      return;
    }
    if (!regression())
      fail(p, name + " compares the output with target values: it needs an mse or l1 loss, and the loss is " +
                  (loss_.is_null() ? std::string("absent") : loss_type()));
  }

  void read_ssim(const json& item, const std::string& p, json& spec) const {
    if (output_.size() != 3) fail(p, "ssim compares images [height, width, channels], and the output is " + shape_text(output_));
    const int64_t size = integer(item, "filter_size", 11, p);
    if (size < 1 || size % 2 == 0) fail(p + "/filter_size", "must be a positive odd number, got " + std::to_string(size));
    if (size > output_[0] || size > output_[1])
      fail(p + "/filter_size", "the " + std::to_string(size) + "×" + std::to_string(size) +
                                   " window does not fit the output's " + shape_text(output_) +
                                   " (tf.image.ssim needs images at least as large as the window)");
    spec["filter_size"] = size;
    spec["filter_sigma"] = positive(item, "filter_sigma", 1.5, p);
    spec["k1"] = positive(item, "k1", 0.01, p);
    spec["k2"] = positive(item, "k2", 0.03, p);
  }

  int64_t integer(const json& item, const char* key, int64_t fallback, const std::string& p) const {
    if (!item.is_object() || !item.contains(key)) return fallback;
    if (!item[key].is_number_integer()) fail(p + "/" + key, "must be an integer, got " + quote_value(item[key]));
    return item[key].get<int64_t>();
  }
  double positive(const json& item, const char* key, double fallback, const std::string& p) const {
    if (!item.is_object() || !item.contains(key)) return fallback;
    if (!item[key].is_number() || !(item[key].get<double>() > 0) || item[key].get<double>() > 1e30)
      fail(p + "/" + key, "must be a positive number, got " + quote_value(item[key]));
    return item[key].get<double>();
  }

  const json& loss_;
  const Shape& output_;
  const Origin& origin_;
};

}  // namespace

json metric_specs(const json* declared, const json& loss, const Shape& output_shape, const Origin& origin,
                  const std::string& pointer) {
  const MetricReader reader(loss, output_shape, origin);
  if (declared == nullptr) return reader.chosen_by_loss();
  if (!declared->is_array())
    throw ManifestError(origin.where(pointer), pointer,
                        "must be an array of metrics, e.g. [\"mae\", {\"type\": \"psnr\", \"max_val\": 1.0}]");
  json out = json::array();
  std::set<std::string> seen;
  for (size_t i = 0; i < declared->size(); ++i) {
    const std::string p = pointer + "/" + std::to_string(i);
    json spec = reader.read((*declared)[i], p);
    if (!seen.insert(spec["name"].get<std::string>()).second)
      throw ManifestError(origin.where(p), p, "'" + spec["name"].get<std::string>() + "' is listed twice");
    out.push_back(std::move(spec));
  }
  return out;
}

}  // namespace ramjet::core::model_rules
