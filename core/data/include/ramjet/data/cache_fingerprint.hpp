// What a file cache's contents depend on, reduced to 64 bits: the source and map configurations, the plugins
// (name and version) that implement them, the take/shard settings, the run seed, and the size and modification
// time of every file or folder the source configuration names (folders one level deep).
#pragma once

#include "ramjet/plugin/components.hpp"
#include "ramjet/data/pipeline_spec.hpp"

#include <cstdint>
#include <vector>

namespace ramjet::core {

uint64_t upstream_fingerprint(const PipelineSpec& spec, const std::filesystem::path& base_dir, uint64_t seed,
                              const std::vector<const ComponentInstance*>& components);

}  // namespace ramjet::core
