#include "ramjet/train/verdict.hpp"

#include <algorithm>

namespace ramjet::core {
namespace {

// TensorFlow Profiler's input-pipeline analysis: under 5 % of step time waiting for input is not input-bound,
// under 20 % moderately, else highly (kModeratelyInfeedBoundThresholdInPercent = 5 and
// kHighlyInfeedBoundThresholdInPercent = 20 in tensorflow/core/profiler/convert/
// op_stats_to_input_pipeline_analysis.cc).
constexpr double kModerately = 0.05;
constexpr double kHighly = 0.20;

// "/data/train" -> "data.train": the manifest's words as a user reads them.
std::string dotted(const std::string& pointer) {
  std::string out = pointer.substr(pointer.empty() || pointer[0] != '/' ? 0 : 1);
  std::replace(out.begin(), out.end(), '/', '.');
  return out;
}

}  // namespace

const char* input_bound_word(InputBound bound) {
  switch (bound) {
    case InputBound::kNot: return "not";
    case InputBound::kModerately: return "moderately";
    case InputBound::kHighly: return "highly";
  }
  return "not";
}

InputBound classify_input_bound(double input_wait_fraction) {
  if (input_wait_fraction < kModerately) return InputBound::kNot;
  if (input_wait_fraction < kHighly) return InputBound::kModerately;
  return InputBound::kHighly;
}

std::vector<std::string> input_advice(const PipelineSpec& spec, InputBound bound, int cores) {
  std::vector<std::string> advice;
  if (bound == InputBound::kNot) return advice;
  const std::string at = dotted(spec.pointer.empty() ? "/data/train" : spec.pointer);
  const int64_t budget = spec.cpu_budget > 0 ? std::min<int64_t>(spec.cpu_budget, cores) : cores;
  const std::string of_budget = " of " + std::to_string(budget) + (spec.cpu_budget > 0 ? " (cpu_budget)" : " cores");
  if (spec.parallelism == 1)
    advice.push_back(at + ".parallelism is 1: set it to \"auto\" so the map runs on up to " + std::to_string(budget) +
                     " threads");
  else if (spec.parallelism > 1 && spec.parallelism < budget)
    advice.push_back(at + ".parallelism is " + std::to_string(spec.parallelism) + of_budget +
                     ": set it to \"auto\"");
  if (spec.prefetch == 0)
    advice.push_back(at + ".prefetch is 0: set it to \"auto\" so batches are made while the model computes");
  if (!spec.map.empty() && !spec.cache && spec.epochs > 1)
    advice.push_back("no cache after " + at + ".map: its " + std::to_string(spec.map.size()) +
                     " transform(s) run again in each of the " + std::to_string(spec.epochs) + " epochs; set " + at +
                     ".cache to \"memory\" (or a file) to run them once");
  if (spec.cpu_budget > 0 && spec.cpu_budget < cores)
    advice.push_back(at + ".cpu_budget is " + std::to_string(spec.cpu_budget) + " of " + std::to_string(cores) +
                     " cores: raise it");
  if (advice.empty())
    advice.push_back(at + " is parallel, prefetched and cached and still cannot keep up: make its map and augment "
                          "cheaper, precompute them into the source, or give the pipeline more cores");
  return advice;
}

nlohmann::json step_verdict(const StepTimes& t, const PipelineSpec& spec, int cores) {
  const double fraction = t.wall_s > 0 ? t.input_wait_s / t.wall_s : 0.0;
  const InputBound bound = classify_input_bound(fraction);
  const double other = std::max(0.0, t.wall_s - t.input_wait_s - t.compute_s - t.communication_s);
  return {{"input_bound", input_bound_word(bound)},
          {"input_wait_fraction", fraction},
          {"breakdown",
           {{"wall_s", t.wall_s},
            {"input_wait_s", t.input_wait_s},
            {"compute_s", t.compute_s},
            {"communication_s", t.communication_s},
            {"other_s", other}}},
          {"advice", input_advice(spec, bound, cores)}};
}

}  // namespace ramjet::core
