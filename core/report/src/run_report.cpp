#include "ramjet/report/run_report.hpp"

#include "ramjet/plugin/failure.hpp"
#include "ramjet/plugin/json_text.hpp"

#include <algorithm>
#include <cstdlib>
#include <limits>

namespace ramjet::core {
namespace {

using nlohmann::json;

// Typed access to one report by JSON pointer, every refusal naming the file and the pointer.
class ReportFields {
 public:
  ReportFields(const json& root, std::string source) : root_(root), source_(std::move(source)) {}

  // Null when the pointer leads nowhere (a missing key, an index past the end, a scalar on the way).
  const json* find(const std::string& pointer) const {
    const json* node = &root_;
    size_t at = 1;
    while (at <= pointer.size() && !pointer.empty()) {
      const size_t next = std::min(pointer.find('/', at), pointer.size());
      const std::string token = pointer.substr(at, next - at);
      if (node->is_object()) {
        auto it = node->find(token);
        if (it == node->end()) return nullptr;
        node = &*it;
      } else if (node->is_array()) {
        char* end = nullptr;
        const unsigned long long index = std::strtoull(token.c_str(), &end, 10);
        if (token.empty() || *end != '\0' || index >= node->size()) return nullptr;
        node = &(*node)[index];
      } else {
        return nullptr;
      }
      at = next + 1;
    }
    return node;
  }

  [[noreturn]] void refuse(const std::string& pointer, const std::string& why) const {
    throw InvalidInput(source_ + "#" + pointer + ": " + why);
  }

  const json& required(const std::string& pointer) const {
    const json* node = find(pointer);
    if (node == nullptr) refuse(pointer, "missing");
    return *node;
  }

  const json& object(const std::string& pointer) const {
    const json& node = required(pointer);
    if (!node.is_object()) mistyped(pointer, "an object", node);
    return node;
  }

  const json& array(const std::string& pointer) const {
    const json& node = required(pointer);
    if (!node.is_array()) mistyped(pointer, "an array", node);
    return node;
  }

  double number(const std::string& pointer) const {
    const json& node = required(pointer);
    if (!node.is_number()) mistyped(pointer, "a number", node);
    return node.get<double>();
  }

  // Absent or null (how the report writes a NaN, such as a diverged loss): no value.
  std::optional<double> optional_number(const std::string& pointer) const {
    const json* node = find(pointer);
    if (node == nullptr || node->is_null()) return std::nullopt;
    return number(pointer);
  }

  int64_t integer(const std::string& pointer) const {
    const json& node = required(pointer);
    if (!node.is_number_integer() ||
        (node.is_number_unsigned() && node.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())))
      mistyped(pointer, "an integer", node);
    return node.get<int64_t>();
  }

  std::optional<int64_t> optional_integer(const std::string& pointer) const {
    if (find(pointer) == nullptr) return std::nullopt;
    return integer(pointer);
  }

  std::string string(const std::string& pointer) const {
    const json& node = required(pointer);
    if (!node.is_string()) mistyped(pointer, "a string", node);
    return node.get<std::string>();
  }

  std::optional<std::string> optional_string(const std::string& pointer) const {
    if (find(pointer) == nullptr) return std::nullopt;
    return string(pointer);
  }

  std::optional<bool> optional_bool(const std::string& pointer) const {
    const json* node = find(pointer);
    if (node == nullptr) return std::nullopt;
    if (!node->is_boolean()) mistyped(pointer, "true or false", *node);
    return node->get<bool>();
  }

 private:
  [[noreturn]] void mistyped(const std::string& pointer, const std::string& expected, const json& got) const {
    refuse(pointer, "must be " + expected + ", got " + excerpt(got.dump(), 60));
  }

  const json& root_;
  std::string source_;
};

EpochRecord read_epoch(const ReportFields& f, const std::string& at) {
  f.object(at);
  EpochRecord e;
  e.epoch = f.integer(at + "/epoch");
  e.loss = f.optional_number(at + "/loss");
  e.accuracy = f.optional_number(at + "/accuracy");
  e.val_loss = f.optional_number(at + "/val_loss");
  e.val_accuracy = f.optional_number(at + "/val_accuracy");
  e.lr = f.optional_number(at + "/lr");
  e.samples_per_s = f.optional_number(at + "/samples_per_s");
  if (const json* entry = f.find(at))
    for (const auto& [key, value] : entry->items())
      if (key.rfind("val_", 0) == 0 && key != "val_loss" && key != "val_accuracy" && key != "val_perplexity")
        if (const auto v = f.optional_number(at + "/" + key)) e.val_metrics[key.substr(4)] = *v;
  return e;
}

Verdict read_verdict(const ReportFields& f) {
  const std::string at = "/train/verdict";
  f.object(at);
  Verdict v;
  v.input_bound = f.string(at + "/input_bound");
  if (v.input_bound != "not" && v.input_bound != "moderately" && v.input_bound != "highly")
    f.refuse(at + "/input_bound", "must be \"not\", \"moderately\" or \"highly\", got \"" + excerpt(v.input_bound, 40) + "\"");
  v.input_wait_fraction = f.number(at + "/input_wait_fraction");
  const std::string b = at + "/breakdown";
  f.object(b);
  v.breakdown.wall_s = f.number(b + "/wall_s");
  v.breakdown.input_wait_s = f.number(b + "/input_wait_s");
  v.breakdown.compute_s = f.number(b + "/compute_s");
  v.breakdown.communication_s = f.optional_number(b + "/communication_s").value_or(0.0);
  v.breakdown.other_s = f.number(b + "/other_s");
  const json& advice = f.array(at + "/advice");
  for (size_t i = 0; i < advice.size(); ++i) v.advice.push_back(f.string(at + "/advice/" + std::to_string(i)));
  return v;
}

StrategySummary read_strategy(const ReportFields& f) {
  const std::string at = "/train/strategy";
  StrategySummary d;
  d.buckets = f.optional_integer(at + "/buckets").value_or(0);
  d.bucket_bytes = f.optional_integer(at + "/bucket_bytes").value_or(0);
  d.split_gradients = f.optional_integer(at + "/split_gradients").value_or(0);
  d.overlapped = f.optional_bool(at + "/overlapped").value_or(false);
  d.all_reduce_s_per_step = f.optional_number(at + "/all_reduce_s_per_step");
  d.unhidden_all_reduce_s_per_step = f.optional_number(at + "/unhidden_all_reduce_s_per_step");
  d.hidden_fraction = f.optional_number(at + "/hidden_fraction");
  d.samples_per_s_per_rank = f.optional_number(at + "/samples_per_s_per_rank");
  return d;
}

PipelineSettings read_pipeline(const ReportFields& f) {
  const std::string at = "/data/train";
  f.object(at);
  PipelineSettings p;
  p.parallelism = f.optional_integer(at + "/parallelism");
  p.prefetch = f.optional_integer(at + "/prefetch");
  p.deterministic = f.optional_bool(at + "/deterministic");
  p.input_wait_s = f.optional_number(at + "/input_wait_s");
  p.skipped = f.optional_integer(at + "/skipped");
  if (f.find(at + "/autotune")) {
    const std::string a = at + "/autotune";
    f.object(a);
    p.parallelism_tuned = f.optional_bool(a + "/tuned/parallelism");
    p.prefetch_tuned = f.optional_bool(a + "/tuned/prefetch");
    p.parallelism_limit = f.optional_integer(a + "/limits/parallelism");
    p.prefetch_limit = f.optional_integer(a + "/limits/prefetch");
    if (f.find(a + "/decisions")) {
      const json& decisions = f.array(a + "/decisions");
      for (size_t i = 0; i < decisions.size(); ++i) {
        const std::string d = a + "/decisions/" + std::to_string(i);
        f.object(d);
        p.decisions.push_back({f.integer(d + "/after_batches"), f.string(d + "/knob"), f.integer(d + "/value"),
                               f.optional_string(d + "/why").value_or("")});
      }
    }
  }
  if (f.find(at + "/cache")) {
    f.object(at + "/cache");
    p.cache_kind = f.string(at + "/cache/kind");
    p.cache_complete = f.optional_bool(at + "/cache/complete");
    p.cache_elements = f.optional_integer(at + "/cache/elements");
  }
  return p;
}

ExportSummary read_export(const ReportFields& f) {
  const std::string at = "/export";
  f.object(at);
  ExportSummary x;
  x.format = f.optional_string(at + "/format").value_or("");
  x.path = f.optional_string(at + "/path").value_or("");
  x.size_ratio = f.optional_number(at + "/size_ratio");
  x.fp32_accuracy = f.optional_number(at + "/fp32_accuracy");
  x.int8_accuracy = f.optional_number(at + "/int8_accuracy");
  x.fp32_samples_per_s = f.optional_number(at + "/fp32_samples_per_s");
  x.int8_samples_per_s = f.optional_number(at + "/int8_samples_per_s");
  return x;
}

}  // namespace

RunReport run_report_from_json(const nlohmann::json& report, const std::string& source) {
  const ReportFields f(report, source);
  if (!report.is_object()) f.refuse("", "must be a JSON object (the report `ramjet run MANIFEST --report FILE` writes)");
  if (f.find("/train") == nullptr)
    f.refuse("/train",
             "missing: not the report of a training run (`ramjet pipeline` and `ramjet eval` reports have no "
             "train section; `ramjet run MANIFEST --report FILE` with a train section writes one)");
  f.object("/train");
  RunReport r;
  r.manifest = f.optional_string("/manifest").value_or("");
  r.precision = f.optional_string("/train/precision").value_or("");
  // An object since the gradient buckets (name, world size, buckets, timings); a bare name before.
  if (const json* s = f.find("/train/strategy"); s != nullptr && s->is_object()) {
    r.strategy = f.optional_string("/train/strategy/name").value_or("");
    if (f.find("/train/strategy/buckets")) r.distributed = read_strategy(f);
  } else {
    r.strategy = f.optional_string("/train/strategy").value_or("");
  }
  r.backend = f.optional_string("/train/backend").value_or("");
  r.replicas = f.optional_integer("/train/replicas").value_or(1);
  r.wall_s = f.number("/train/wall_s");
  r.samples_per_s = f.number("/train/samples_per_s");
  r.final_loss = f.optional_number("/train/final_loss");
  r.final_accuracy = f.optional_number("/train/final_accuracy");
  r.stopped_early = f.optional_bool("/train/stopped_early").value_or(false);
  const json& history = f.array("/train/history");
  for (size_t i = 0; i < history.size(); ++i) r.history.push_back(read_epoch(f, "/train/history/" + std::to_string(i)));
  if (f.find("/train/verdict")) r.verdict = read_verdict(f);
  if (f.find("/eval")) {
    f.object("/eval");
    r.eval_loss = f.optional_number("/eval/loss");
    r.eval_accuracy = f.optional_number("/eval/accuracy");
  }
  if (f.find("/data/train")) r.pipeline = read_pipeline(f);
  if (f.find("/export")) r.exported = read_export(f);
  return r;
}

RunReport read_run_report(const std::filesystem::path& path) {
  RunReport r = run_report_from_json(read_json_file(path), path.string());
  r.file = path;
  return r;
}

}  // namespace ramjet::core
