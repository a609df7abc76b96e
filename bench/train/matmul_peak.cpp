// This machine's oneDNN matmul throughput (GFLOP/s) in float32 and bfloat16 with the threads OpenMP is given:
// the yardstick for how much of the hardware a training step uses. Prints one JSON object.
#include <oneapi/dnnl/dnnl.hpp>

#include <chrono>
#include <cstdio>
#include <vector>

namespace {

double gflops(dnnl::memory::data_type type, int64_t n, int repeats) {
  using namespace dnnl;
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  memory::desc a({n, n}, type, memory::format_tag::ab), b({n, n}, type, memory::format_tag::any),
      c({n, n}, memory::data_type::f32, memory::format_tag::ab);
  matmul::primitive_desc pd(matmul::desc(a, b, c), eng);
  memory ma(pd.src_desc(), eng), mb(pd.weights_desc(), eng), mc(pd.dst_desc(), eng);
  matmul mm(pd);
  auto run = [&] { mm.execute(s, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}}); };
  run();
  s.wait();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < repeats; ++i) run();
  s.wait();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return 2.0 * static_cast<double>(n) * n * n * repeats / seconds * 1e-9;
}

}  // namespace

int main() {
  const double f32 = gflops(dnnl::memory::data_type::f32, 2048, 10);
  double bf16 = 0;
  try {
    bf16 = gflops(dnnl::memory::data_type::bf16, 2048, 10);
  } catch (const dnnl::error&) {
    // no bf16 matmul on this CPU
  }
  std::printf("{\"float32_gflops\": %.1f, \"bfloat16_gflops\": %.1f}\n", f32, bf16);
  return 0;
}
