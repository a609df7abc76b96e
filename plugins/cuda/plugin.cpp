#include "float16_policy.hpp"

#ifdef RAMJET_CUDA_BACKEND
#include "backend/backend.hpp"

RAMJET_PLUGIN("cuda", RAMJET_PLUGIN_VERSION,
              ramjet::precision_policy<cuda_plugin::MixedFloat16Policy>("mixed_float16"),
              ramjet::backend<cuda_plugin::CudaBackend>("cuda"))
#else
RAMJET_PLUGIN("cuda", RAMJET_PLUGIN_VERSION,
              ramjet::precision_policy<cuda_plugin::MixedFloat16Policy>("mixed_float16"))
#endif
