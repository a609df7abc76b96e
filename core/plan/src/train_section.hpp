// Reads the `train` section into a TrainConfig.
#pragma once

#include "ramjet/plan/train_config.hpp"
#include "section_reader.hpp"

#include <optional>

namespace ramjet::core {

// Problems go to `reader`; nothing is returned when there were any.
std::optional<TrainConfig> read_train(const nlohmann::json& train, SectionReader& reader, uint64_t seed);

}  // namespace ramjet::core
