// What the plugin's own float loops (norm_clip.cpp, depthwise_grad.cpp) share: vectors of W floats as GCC vector
// types, and the choice between their AVX2 and baseline builds.
//
// Each loop is written once over vectors of W floats and built twice, for AVX2 (W = 8) and for the x86-64
// baseline (W = 4), chosen when first called: the plugin is built for any x86-64. Masks are integer vectors: GCC
// splits a vector wider than the target's into scalar compares. The vectors never cross a real call (these
// helpers are always inlined into one instruction set's loops), so GCC's note that passing one would change with
// the target's ABI does not apply: -Wpsabi is off for the rest of every file that includes this one.
#pragma once

#pragma GCC diagnostic ignored "-Wpsabi"

#include <dnnl.hpp>

#include <cstring>

namespace onednn::simd {

template <int W>
struct Vec {
  typedef float F __attribute__((vector_size(W * sizeof(float))));
  typedef int32_t I __attribute__((vector_size(W * sizeof(float))));
};

template <class F>
[[gnu::always_inline]] inline F load(const float* p) {
  F v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class F>
[[gnu::always_inline]] inline void store(float* p, F v) {
  std::memcpy(p, &v, sizeof v);
}
template <class F>
[[gnu::always_inline]] inline F splat(float f) {
  return F{} + f;
}

// AVX2 where the CPU has it and oneDNN may use it: ONEDNN_MAX_CPU_ISA caps these loops as it caps oneDNN's (and
// lets a test run the baseline ones on any machine).
inline bool use_avx2() {
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && isa != dnnl::cpu_isa::sse41 &&
         isa != dnnl::cpu_isa::avx;
}

}  // namespace onednn::simd
