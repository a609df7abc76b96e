// A bf16 convolution's weight gradient as AMX matmuls over chunks of the batch (plugins/onednn/layers/
// conv2d_gemm_weights.hpp), where the output map is small (7 x 7) and the layer runs over the whole batch: on two
// threads it takes that path, on one the float32 kernel on float32 copies of the maps. Both sum exact products of
// the same bf16 values in float32, so their gradients agree to float32's reduction-order rounding; the matmul path
// repeats bit for bit whichever thread took which chunk. Skipped without AMX, where neither path runs.
#include "cpu_features.hpp"
#include "onednn_harness.hpp"
#include "onednn_models.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

using namespace ramjet::core;
using namespace ramjet::test::cpu_backend;

namespace {

// x [14, 14, 32] → 3x3 stride 2 "same" (Keras's uneven padding: none before, one after), 32 → 64 → 3x3 "same"
// 64 → 48 → 1x1 48 → 32 → global average pool → dense. Every convolution without bias, every output 7 x 7; not
// square in channels, so a swapped index would show.
json small_maps_graph() {
  Ir ir;
  ir.input("x", {14, 14, 32})
      .conv("c1", "x", 32, {7, 7, 64},
            {{"filters", 64}, {"kernel", {3, 3}}, {"strides", {2, 2}}, {"padding", {0, 1, 0, 1}}, {"use_bias", false}})
      .conv("c2", "c1", 64, {7, 7, 48},
            {{"filters", 48}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}, {"use_bias", false}})
      .conv("c3", "c2", 48, {7, 7, 32}, {{"filters", 32}, {"kernel", {1, 1}}, {"use_bias", false}})
      .node("pool", "global_avg_pool", {"c3"}, {32});
  return ir.dense("fc", "pool", 32, 4).classifier("fc");
}

// One training step of batch 32 from fixed parameters: the convolutions' kernel gradients.
std::map<std::string, std::vector<float>> kernel_gradients(int threads) {
  const json g = small_maps_graph();
  Harness h(json{{"threads", threads}});
  const Status compiled = h.compile(g, {{"batch", 32}, {"precision", "mixed_bfloat16"}, {"optimizer", {{"type", "sgd"}}}});
  EXPECT_TRUE(compiled.ok()) << compiled.message;
  Example params = random_params(g, 17, 0.5f);
  EXPECT_TRUE(h.set_state("parameters", params).ok());
  Example batch = batch_of({14, 14, 32}, 32, 4, 19), out;
  EXPECT_TRUE(h.forward(batch, out, true).ok());
  EXPECT_TRUE(h.backward().ok());
  Example grads = h.state("gradients");
  std::map<std::string, std::vector<float>> r;
  for (const char* name : {"c1/kernel", "c2/kernel", "c3/kernel"}) r[name] = values(grads, name);
  return r;
}

}  // namespace

TEST(OnednnGemmWeights, SmallMapsWeightGradientsAsAmxMatmulsAgreeWithTheFloat32KernelAndRepeat) {
  if (!cpu_has_amx_bf16()) GTEST_SKIP() << "no AMX here: bf16 weight gradients stay oneDNN's";
  const auto matmuls = kernel_gradients(2), float32 = kernel_gradients(1);
  for (const auto& [name, want] : float32) {
    SCOPED_TRACE(name);
    expect_near_all(matmuls.at(name), want, 2e-4, name.c_str());
  }
  EXPECT_EQ(kernel_gradients(2), matmuls) << "the matmul path repeats bit for bit";
}
