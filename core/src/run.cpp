#include "ramjet/core/run.hpp"

#include "ramjet/core/input_pipeline.hpp"
#include "ramjet/core/tensor_stats.hpp"

#include <chrono>
#include <cstdio>
#include <ostream>

namespace ramjet::core {
namespace {

nlohmann::json drive(const PipelineManifest& manifest, const std::string& name, PluginRegistry& registry,
                     uint64_t seed, std::ostream* progress) {
  const auto start = std::chrono::steady_clock::now();
  InputPipeline pipeline(manifest, "/data/" + name, registry, seed);
  TensorStats stats;
  int64_t batches = 0, elements = 0;
  while (auto batch = pipeline.next_batch()) {
    stats.add_batch(*batch);
    ++batches;
    elements += batch->entries.empty() ? 0 : batch->entries.front().tensor->dl_tensor.shape[0];
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  nlohmann::json report;
  report["source"] = manifest.doc["data"][name]["source"]["type"];
  report["epochs"] = pipeline.config().epochs;
  report["batch"] = pipeline.config().batch;
  report["elements"] = elements;
  report["batches"] = batches;
  report["wall_s"] = seconds;
  report["elements_per_s"] = seconds > 0 ? static_cast<double>(elements) / seconds : 0.0;
  report["tensors"] = stats.to_json();
  if (progress) {
    char line[256];
    std::snprintf(line, sizeof line, "%s: %lld elements in %lld batches, %.2f s, %.0f elements/s\n", name.c_str(),
                  static_cast<long long>(elements), static_cast<long long>(batches), seconds,
                  report["elements_per_s"].get<double>());
    *progress << line;
    for (const auto& [tensor, s] : report["tensors"].items()) {
      *progress << "  " << tensor << " " << s["dtype"].get<std::string>() << " " << s["shape"].dump();
      if (s.contains("mean")) {
        std::snprintf(line, sizeof line, "  min %.4g  max %.4g  mean %.4g  std %.4g", s["min"].get<double>(),
                      s["max"].get<double>(), s["mean"].get<double>(), s["std"].get<double>());
        *progress << line;
      }
      if (s.contains("histogram")) *progress << "  classes " << s["histogram"].size();
      *progress << "\n";
    }
  }
  return report;
}

}  // namespace

nlohmann::json run_pipeline(const PipelineManifest& manifest, PluginRegistry& registry, const RunOptions& options) {
  require_valid(manifest, registry);
  const uint64_t seed = manifest.doc.value("seed", uint64_t{0});
  nlohmann::json report;
  report["manifest"] = manifest.path.string();
  report["seed"] = seed;
  for (const char* name : {"train", "eval"})
    if (manifest.doc["data"].contains(name)) report["data"][name] = drive(manifest, name, registry, seed, options.progress);
  return report;
}

}  // namespace ramjet::core
