#include "ramjet/run/run.hpp"

#include "ramjet/data/input_pipeline.hpp"
#include "ramjet/data/tensor_stats.hpp"
#include "ramjet/deploy/model_export.hpp"
#include "ramjet/plugin/failure.hpp"
#include "ramjet/plugin/trace.hpp"
#include "ramjet/train/trainer.hpp"

#include <sys/resource.h>

#include <chrono>
#include <fstream>
#include <string>
#include <cstdio>
#include <ostream>

namespace ramjet::core {
namespace {

void print_summary(std::ostream& out, const std::string& name, const nlohmann::json& report) {
  char line[320];
  const auto& p = report["pipeline"];
  std::snprintf(line, sizeof line,
                "%s: %lld elements in %lld batches, %.2f s, %.0f elements/s (parallelism %d, prefetch %d%s)\n",
                name.c_str(), static_cast<long long>(report["elements"].get<int64_t>()),
                static_cast<long long>(report["batches"].get<int64_t>()), report["wall_s"].get<double>(),
                report["elements_per_s"].get<double>(), p["parallelism"].get<int>(), p["prefetch"].get<int>(),
                p["skipped"].get<int64_t>() ? (", " + std::to_string(p["skipped"].get<int64_t>()) + " skipped").c_str()
                                            : "");
  out << line;
  if (!report.contains("tensors")) return;
  for (const auto& [tensor, s] : report["tensors"].items()) {
    out << "  " << tensor << " " << s["dtype"].get<std::string>() << " " << s["shape"].dump();
    if (s.contains("mean")) {
      std::snprintf(line, sizeof line, "  min %.4g  max %.4g  mean %.4g  std %.4g", s["min"].get<double>(),
                    s["max"].get<double>(), s["mean"].get<double>(), s["std"].get<double>());
      out << line;
    }
    if (s.contains("histogram")) out << "  classes " << s["histogram"].size();
    out << "\n";
  }
}

nlohmann::json drive(const PipelineSpec& spec, PluginRegistry& registry, uint64_t seed, bool with_stats) {
  const auto setup_start = std::chrono::steady_clock::now();
  InputPipeline pipeline(spec, registry, seed);
  // Throughput counts iteration only: opening the source (reading an in-memory dataset) is setup.
  const auto start = std::chrono::steady_clock::now();
  const double setup_s = std::chrono::duration<double>(start - setup_start).count();
  TensorStats stats;
  int64_t batches = 0, elements = 0;
  while (auto batch = pipeline.next_batch()) {
    if (with_stats) stats.add_batch(*batch);
    ++batches;
    elements += batch->entries.empty() ? 0 : batch->entries.front().tensor->dl_tensor.shape[0];
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  nlohmann::json report;
  report["source"] = pipeline.spec().source.type();
  report["epochs"] = pipeline.spec().epochs;
  report["batch"] = pipeline.spec().batch;
  report["elements"] = elements;
  report["batches"] = batches;
  report["setup_s"] = setup_s;
  report["wall_s"] = seconds;
  report["elements_per_s"] = seconds > 0 ? static_cast<double>(elements) / seconds : 0.0;
  report["pipeline"] = pipeline.report();
  if (with_stats) report["tensors"] = stats.to_json();
  return report;
}

}  // namespace

int64_t peak_rss_bytes() {
  // VmHWM belongs to this address space; getrusage's ru_maxrss survives execve and would report the peak of
  // whatever process forked us (a Python benchmark driver, say).
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

nlohmann::json run_pipeline(const Plan& plan, PluginRegistry& registry, const RunOptions& options) {
  if (plan.train) {
    TrainOptions train_options;
    train_options.progress = options.progress;
    train_options.terminal = options.terminal;
    train_options.resume = options.resume;
    Example trained;
    if (plan.exporting) {
      prepare_export_destination(plan);
      train_options.trained_parameters = &trained;
    }
    nlohmann::json report = train_model(plan, registry, train_options);
    if (!trained.entries.empty()) {  // rank 0 only, under a mirrored strategy
      TraceSpan span("export");
      report["export"] = export_trained_model(plan, registry, trained, options.progress);
    }
    report["manifest"] = plan.origin.file.string();
    report["peak_rss_bytes"] = peak_rss_bytes();
    return report;
  }
  nlohmann::json report;
  report["manifest"] = plan.origin.file.string();
  report["seed"] = plan.seed;
  for (const auto& [name, spec] : {std::pair{"train", &plan.train_data}, std::pair{"eval", &plan.eval_data}}) {
    if (!*spec) continue;
    report["data"][name] = drive(**spec, registry, plan.seed, true);
    if (options.progress) print_summary(*options.progress, name, report["data"][name]);
  }
  report["peak_rss_bytes"] = peak_rss_bytes();
  return report;
}

nlohmann::json iterate_pipeline(const Plan& plan, const std::string& name, PluginRegistry& registry,
                                const RunOptions& options) {
  const auto& spec = name == "train" ? plan.train_data : name == "eval" ? plan.eval_data : std::nullopt;
  if (!spec) throw InvalidInput(plan.origin.where("/data/" + name) + ": the manifest has no '" + name + "' pipeline");
  nlohmann::json report = drive(*spec, registry, plan.seed, false);
  report["manifest"] = plan.origin.file.string();
  report["pipeline_name"] = name;
  report["peak_rss_bytes"] = peak_rss_bytes();
  if (options.progress) print_summary(*options.progress, name, report);
  return report;
}

}  // namespace ramjet::core
