// Which instructions the backend's own vector loops may use: what the CPU has, capped as oneDNN is capped
// (ONEDNN_MAX_CPU_ISA), so that one setting governs every kernel of the plugin and a test can run the narrower
// loops on any machine.
#pragma once

#include "common.hpp"

namespace onednn {

// Whether oneDNN's effective ISA reaches `level` (its values are bit sets, each holding those below it).
inline bool isa_allowed(dnnl_cpu_isa_t level) {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  return (isa & static_cast<unsigned>(level)) == static_cast<unsigned>(level);
}

// AVX-512 as our loops use it (F, BW, VL, DQ), allowed.
inline bool avx512_allowed() {
  return isa_allowed(dnnl_cpu_isa_avx512_core) && __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512dq");
}

// AVX-512's conversion of floats to bf16, allowed.
inline bool avx512_bf16_allowed() {
  return avx512_allowed() && isa_allowed(dnnl_cpu_isa_avx512_core_bf16) && __builtin_cpu_supports("avx512bf16");
}

// AVX2 with FMA, allowed.
inline bool avx2_allowed() {
  return isa_allowed(dnnl_cpu_isa_avx2) && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

// Whether oneDNN may run AMX here: its bf16 convolutions then take channels-last maps.
inline bool amx_allowed() { return isa_allowed(dnnl_cpu_isa_avx512_core_amx); }

}  // namespace onednn
