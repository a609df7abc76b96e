#include "float16_policy.hpp"

RAMJET_PLUGIN("cuda", RAMJET_PLUGIN_VERSION,
              ramjet::precision_policy<cuda_plugin::MixedFloat16Policy>("mixed_float16"))
