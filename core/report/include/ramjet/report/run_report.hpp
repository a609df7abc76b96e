// A training run's JSON report (`ramjet run MANIFEST --report FILE`) read back and checked, for `ramjet report`.
// Only what the HTML page shows is kept; every value is checked for its type once, here, so the page never meets
// a surprise. Reports of `ramjet pipeline` and `ramjet eval` (no `train` object) are refused.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ramjet::core {

// One row of train.history. A metric the run did not measure (accuracy without labels, val_* without eval data)
// is absent; one that was not a number (a diverged loss is written as null) is absent too.
struct EpochRecord {
  int64_t epoch = 0;
  std::optional<double> loss, accuracy, val_loss, val_accuracy;
  std::optional<double> lr, samples_per_s;
  // The model's other metrics on the eval data (val_mae, val_psnr, ...), by name without "val_".
  std::map<std::string, double> val_metrics;
};

// train.verdict.breakdown: where the training loop's wall time went.
struct StepBreakdown {
  double wall_s = 0, input_wait_s = 0, compute_s = 0, communication_s = 0, other_s = 0;
};

struct Verdict {
  std::string input_bound;  // "not", "moderately", "highly"
  double input_wait_fraction = 0;
  StepBreakdown breakdown;
  std::vector<std::string> advice;
};

struct AutotuneDecision {
  int64_t after_batches = 0;
  std::string knob;
  int64_t value = 0;
  std::string why;
};

// data.train as it ran: the settings the autotuner chose and whether it was allowed to choose them.
struct PipelineSettings {
  std::optional<int64_t> parallelism, prefetch;
  std::optional<bool> parallelism_tuned, prefetch_tuned;
  std::optional<int64_t> parallelism_limit, prefetch_limit;
  std::vector<AutotuneDecision> decisions;
  std::optional<std::string> cache_kind;  // absent: no cache
  std::optional<bool> cache_complete;
  std::optional<int64_t> cache_elements;
  std::optional<bool> deterministic;
  std::optional<double> input_wait_s;
  std::optional<int64_t> skipped;
};

struct ExportSummary {
  std::string format, path;
  std::optional<double> size_ratio, fp32_accuracy, int8_accuracy, fp32_samples_per_s, int8_samples_per_s;
};

// train.strategy's numbers for a run of several replicas (reports of one replica have none).
struct StrategySummary {
  int64_t buckets = 0, bucket_bytes = 0;
  int64_t split_gradients = 0;  // gradients all-reduced in row pieces (absent in older reports: 0)
  bool overlapped = false;
  std::optional<double> all_reduce_s_per_step, unhidden_all_reduce_s_per_step, hidden_fraction,
      samples_per_s_per_rank;
};

struct RunReport {
  std::filesystem::path file;  // where it was read from
  std::string manifest;        // the pipeline manifest the run used, as the report names it
  std::string precision, strategy, backend;
  int64_t replicas = 1;
  double wall_s = 0, samples_per_s = 0;
  std::optional<double> final_loss, final_accuracy;
  std::optional<double> eval_loss, eval_accuracy;
  bool stopped_early = false;
  std::vector<EpochRecord> history;
  std::optional<Verdict> verdict;
  std::optional<PipelineSettings> pipeline;
  std::optional<ExportSummary> exported;
  std::optional<StrategySummary> distributed;
};

// Checks and keeps what the page needs. `source` names the document in messages ("run.json"). Throws InvalidInput
// "<source>#<JSON pointer>: <what is wrong>" for a missing or mistyped field.
RunReport run_report_from_json(const nlohmann::json& report, const std::string& source);

// Reads, parses (strictly: byte offset of a syntax error, duplicate keys) and checks a report file.
RunReport read_run_report(const std::filesystem::path& path);

}  // namespace ramjet::core
