// Before data-parallel training starts, every rank checks that all ranks agree on what they are about to train —
// the graph, the parameters, the global batch, the steps per epoch — as PyTorch's TORCH_DISTRIBUTED_DEBUG=DETAIL
// check does. Ranks that disagree would otherwise issue different collectives and wait on each other until the
// strategy's timeout, or silently average unrelated gradients.
#pragma once

#include "ramjet/plugin/model_components.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace ramjet::core {

struct AgreementItem {
  std::string what;  // "the global batch (data.train.batch)"
  int64_t value;     // the number itself, or a hash of text (then `numeric` is false)
  bool numeric;
};

// A 63-bit FNV-1a hash of `text`, the same on every machine.
int64_t agreement_hash(const std::string& text);

// One broadcast of rank 0's items and one all-reduce of each rank's first differing item; throws InvalidInput on
// every rank naming the first item some rank disagrees on and the ranks that differ from rank 0.
void check_replicas_agree(const Strategy& strategy, int32_t rank, int32_t world, const std::vector<AgreementItem>& items);

}  // namespace ramjet::core
