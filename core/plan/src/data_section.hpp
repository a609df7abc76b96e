// Reads one input pipeline of the `data` section into a PipelineSpec.
#pragma once

#include "ramjet/data/pipeline_spec.hpp"
#include "section_reader.hpp"

#include <optional>

namespace ramjet::core {

// Problems go to `reader`; nothing is returned when there were any in this pipeline.
std::optional<PipelineSpec> read_pipeline(const nlohmann::json& value, const std::string& pointer,
                                          SectionReader& reader, uint64_t seed);

}  // namespace ramjet::core
