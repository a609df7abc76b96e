// What the CPU the tests run on has, for tests whose expectations depend on the kernels oneDNN (or the cpu
// backend's own loops) can choose. They read CPUID; a cap set through ONEDNN_MAX_CPU_ISA is the test's to check.
#pragma once

#include <cpuid.h>

namespace ramjet::test {

// AVX-512 as the cpu backend's own loops need it (F, BW, VL, DQ).
inline bool cpu_has_avx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}

// Whether the CPU has AMX for bf16 (CPUID leaf 7: EDX bit 22), which oneDNN uses where the kernel allows it.
inline bool cpu_has_amx_bf16() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (d & (1u << 22)) != 0;
}

}  // namespace ramjet::test
