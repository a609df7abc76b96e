// Reads the `export` section into an ExportConfig.
#pragma once

#include "ramjet/plan/export_config.hpp"
#include "section_reader.hpp"

#include <optional>

namespace ramjet::core {

// Problems go to `reader`; nothing is returned when there were any.
std::optional<ExportConfig> read_export(const nlohmann::json& exporting, SectionReader& reader, uint64_t seed);

}  // namespace ramjet::core
