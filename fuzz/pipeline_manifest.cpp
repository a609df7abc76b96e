// The pipeline manifest (core/plan): load_pipeline_manifest, then read_plan, which validates every section and
// asks the stock plugins (built in this tree) about their components' configurations. Problems are listed, never
// thrown; loading throws InvalidInput only.
#include "fuzz_support.hpp"

#include "ramjet/plan/plan.hpp"
#include "ramjet/plugin/failure.hpp"

#include <memory>
#include <vector>

namespace {

ramjet::core::PluginRegistry& registry() {
  static ramjet::core::PluginRegistry r(ramjet::core::DiscoveryOptions{{RAMJET_FUZZ_PLUGIN_DIR}, {}, {}});
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Each library stays loaded for the whole run: reloading per input would be slow and hide nothing.
  static std::vector<std::shared_ptr<ramjet::core::PluginLibrary>> held;
  for (const auto& entry : registry().plugins())
    if (entry.usable) held.push_back(registry().load(entry));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = ramjet::fuzz::write_scratch("pipeline.json", data, size);
  ramjet::core::PipelineManifest manifest;
  try {
    manifest = ramjet::core::load_pipeline_manifest(path);
  } catch (const ramjet::core::InvalidInput&) {
    return 0;
  }
  const ramjet::core::PlanReading reading = ramjet::core::read_plan(manifest, registry());
  for (const auto& problem : reading.problems)
    if (problem.message.empty()) __builtin_trap();  // a problem must say what is wrong
  return 0;
}
