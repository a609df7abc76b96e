// Which checkpoint `ramjet eval` and `ramjet generate` read: the --checkpoint file when given, else the newest in
// the manifest's train.checkpoint.dir. Throws InvalidInput naming what is missing; `use` ("evaluate", "generate
// from") completes the message.
#pragma once

#include "ramjet/plan/plan.hpp"

#include <filesystem>
#include <optional>

namespace ramjet::core {

std::filesystem::path checkpoint_to_use(const Plan& plan, const std::optional<std::filesystem::path>& given,
                                        const char* use);

}  // namespace ramjet::core
