#include "checkpoint_choice.hpp"

#include "ramjet/plugin/failure.hpp"
#include "ramjet/train/checkpoint.hpp"

#include <string>

namespace ramjet::core {

std::filesystem::path checkpoint_to_use(const Plan& plan, const std::optional<std::filesystem::path>& given,
                                        const char* use) {
  if (given) return *given;
  if (!plan.train->checkpoint)
    throw InvalidInput(plan.origin.where("/train/checkpoint") + ": no checkpoint directory; pass --checkpoint FILE");
  auto latest = latest_checkpoint(plan.train->checkpoint->dir);
  if (!latest)
    throw InvalidInput(plan.train->checkpoint->dir.string() + ": no checkpoint to " + use +
                       " (train first with `ramjet run`)");
  return *latest;
}

}  // namespace ramjet::core
