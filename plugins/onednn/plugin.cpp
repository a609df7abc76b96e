// The oneDNN plugin: the "cpu" backend and the "mixed_bfloat16" precision policy that describes its bf16 path.
#include "backend.hpp"
#include "precision_policy.hpp"

RAMJET_PLUGIN("onednn", RAMJET_PLUGIN_VERSION, ramjet::backend<onednn::CpuBackend>("cpu"),
              ramjet::precision_policy<onednn::MixedBfloat16Policy>("mixed_bfloat16"))
