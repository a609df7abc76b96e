// The nccl strategy plugin, one shared object.
#include "nccl_strategy.hpp"

RAMJET_PLUGIN("nccl", RAMJET_PLUGIN_VERSION, ramjet::strategy<ramjet_nccl::NcclStrategy>("nccl"))
