// The cpu backend's convolutions over a batch cut into chunks of examples (plugins/onednn/batch_chunks.hpp): with
// two threads and a batch of 32, each convolution runs as two chunks of 16 taken by whichever thread is free. Its
// outputs and gradients must be those of the whole batch on one thread (within float32's reduction-order
// tolerance), and the same bits from run to run and step to step whichever thread took which chunk. The same holds
// where a max_pool that reads a convolution runs in its chunks (layers/chunk_max_pool.hpp); a batch norm whose
// statistics are summed there gives the bits of its own pass.
#include "onednn_harness.hpp"
#include "ramjet/plugin/log.hpp"
#include "onednn_models.hpp"
#include "test_support.hpp"
#include "cpu_features.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace ramjet::test::cpu_backend;
using ramjet::test::cpu_has_amx_bf16;
using ramjet::test::cpu_has_avx512;

namespace {

// Every kind of convolution the chunked layer takes: a one-channel stem, a 16 -> 16 3x3 (Winograd in float32), a
// stride-2 one with Keras's uneven "same" padding, a 1x1 without bias, and a depthwise one.
json chunked_convolution_graph() {
  return Ir()
      .input("x", {12, 12, 1})
      .conv("stem", "x", 1, {12, 12, 16},
            {{"filters", 16}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}, {"activation", "relu"}})
      .conv("wide", "stem", 16, {12, 12, 16},
            {{"filters", 16}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}, {"activation", "tanh"}})
      .conv("down", "wide", 16, {6, 6, 32},
            {{"filters", 32}, {"kernel", {3, 3}}, {"strides", {2, 2}}, {"padding", {0, 1, 0, 1}}})
      .conv("depthwise", "down", 32, {6, 6, 32},
            {{"filters", 32}, {"kernel", {3, 3}}, {"groups", 32}, {"padding", {1, 1, 1, 1}}, {"activation", "relu"}})
      .conv("point", "depthwise", 32, {6, 6, 8}, {{"filters", 8}, {"kernel", {1, 1}}, {"use_bias", false}})
      .node("flat", "flatten", {"point"}, {288})
      .dense("fc", "flat", 288, 3)
      .classifier("fc");
}

// Convolutions, each read only by a max_pool, so each pair runs as one chunked layer: a relu before a floor pool
// that drops the last row and column (5 x 5 -> 2 x 2), a linear one, and a relu before a padded 3 x 3 pool.
json pooled_convolution_graph() {
  return Ir()
      .input("x", {12, 12, 1})
      .conv("c1", "x", 1, {10, 10, 16}, {{"filters", 16}, {"kernel", {3, 3}}, {"activation", "relu"}})
      .node("p1", "max_pool", {"c1"}, {5, 5, 16}, {{"pool", {2, 2}}})
      .conv("c2", "p1", 16, {5, 5, 16}, {{"filters", 16}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}})
      .node("p2", "max_pool", {"c2"}, {2, 2, 16}, {{"pool", {2, 2}}})
      .conv("c3", "p2", 16, {2, 2, 16},
            {{"filters", 16}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}, {"activation", "relu"}})
      .node("p3", "max_pool", {"c3"}, {2, 2, 16}, {{"pool", {3, 3}}, {"strides", {1, 1}}, {"padding", {1, 1, 1, 1}}})
      .node("flat", "flatten", {"p3"}, {64})
      .dense("fc", "flat", 64, 3)
      .classifier("fc");
}

// A valid 3x3 convolution whose 9 x 13 x 64 input needs a gradient: Winograd's 4 x 4 tiles cover 8 x 12 of it, so
// its backward-data is the tiles plus a border row and column (layers/winograd_border.hpp) on CPUs with AVX-512.
// Not square, and two blocks of 16 channels each way, so a swapped index would show.
json border_convolution_graph() {
  return Ir()
      .input("x", {9, 13, 1})
      .conv("stem", "x", 1, {9, 13, 64},
            {{"filters", 64}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}, {"activation", "relu"}})
      .conv("edge", "stem", 64, {7, 11, 32}, {{"filters", 32}, {"kernel", {3, 3}}, {"activation", "relu"}})
      .node("flat", "flatten", {"edge"}, {2464})
      .dense("fc", "flat", 2464, 3)
      .classifier("fc");
}

struct ChunkStepResult {
  Status compiled;
  std::vector<float> logits;
  std::map<std::string, std::vector<float>> gradients;
};

// Two training steps of the graph from the same parameters and batches; the second step's logits and gradients
// (after one update, so the weights' copies in the primitives' layouts were refreshed).
ChunkStepResult two_chunk_steps(const json& config, const char* precision,
                                const json& g = chunked_convolution_graph(), const Shape& image = {12, 12, 1}) {
  ChunkStepResult r;
  Harness h(config);
  json options = adam_options(32);
  options["precision"] = precision;
  const Status compiled = h.compile(g, options);
  r.compiled = compiled;
  if (!compiled.ok()) return r;
  Example params = random_params(g, 41, 0.3f);
  EXPECT_TRUE(h.set_state("parameters", params).ok());
  for (uint32_t step = 1; step <= 2; ++step) {
    std::mt19937 rng(100 + step);
    Example batch = separable_batch(32, image, rng), out;
    const Status f = h.forward(batch, out, true);
    EXPECT_TRUE(f.ok()) << f.message;
    EXPECT_TRUE(h.backward().ok());
    if (step == 2) {
      r.logits = values(out, "fc");
      Example grads = h.state("gradients");
      for (const auto& [name, spec] : g["params"].items()) r.gradients[name] = values(grads, name);
    } else {
      EXPECT_TRUE(h.update(step, 0.01f).ok());
    }
  }
  return r;
}

// The backend's debug lines while it lives: stderr at debug level, captured until lines() (called once).
class DebugLines {
 public:
  DebugLines() : before_(ramjet::core::log_level()) {
    ramjet::core::set_log_level(RAMJET_LOG_DEBUG);
    testing::internal::CaptureStderr();
  }
  std::string lines() {
    std::string text = testing::internal::GetCapturedStderr();
    ramjet::core::set_log_level(before_);
    return text;
  }

 private:
  ramjet_log_level before_;
};

// Compiles `g` as a training plan for batch 32 on two threads in `precision`.
Status compile_on_two_threads(Harness& h, const json& g, const char* precision) {
  json options = adam_options(32);
  options["precision"] = precision;
  return h.compile(g, options);
}

// What the cpu backend's plans fused away, by its debug line as it compiles `g` (a training plan for batch 32) on
// two threads.
std::string fused_away_at_compile(const json& g, const char* precision) {
  DebugLines debug;
  {
    Harness h(json{{"threads", 2}});
    (void)compile_on_two_threads(h, g, precision);
  }
  const std::string err = debug.lines();
  const size_t at = err.find("fused into their readers: ");
  return at == std::string::npos ? "" : err.substr(at, err.find('\n', at) - at);
}

void expect_chunk_steps_close(const ChunkStepResult& got, const ChunkStepResult& want, double tol) {
  expect_near_all(got.logits, want.logits, tol, "logits");
  for (const auto& [name, values] : want.gradients) expect_near_all(got.gradients.at(name), values, tol, name.c_str());
}

}  // namespace

TEST(OnednnBatchChunks, ConvolutionsInChunksMatchTheWholeBatchOnOneThread) {
  const ChunkStepResult chunked = two_chunk_steps(json{{"threads", 2}}, "float32");
  ASSERT_TRUE(chunked.compiled.ok()) << chunked.compiled.message;
  const ChunkStepResult whole = two_chunk_steps(kOneThread, "float32");
  ASSERT_EQ(chunked.gradients.size(), whole.gradients.size());
  expect_chunk_steps_close(chunked, whole, 2e-4);
  // The same bits again, whichever thread took which chunk this time.
  const ChunkStepResult again = two_chunk_steps(json{{"threads", 2}}, "float32");
  EXPECT_EQ(again.logits, chunked.logits);
  EXPECT_EQ(again.gradients, chunked.gradients);
}

TEST(OnednnBatchChunks, Bf16ConvolutionsInChunksAgreeWithTheWholeBatchAndRepeatExactly) {
  const ChunkStepResult chunked = two_chunk_steps(json{{"threads", 2}}, "mixed_bfloat16");
  // The backend refuses mixed_bfloat16 on a CPU without AVX-512 (plugins/onednn/options.cpp).
  if (chunked.compiled.code == RAMJET_ERR_UNSUPPORTED &&
      chunked.compiled.message.find("needs a CPU with AVX-512") != std::string::npos)
    GTEST_SKIP() << "this CPU cannot run mixed_bfloat16: " << chunked.compiled.message;
  ASSERT_TRUE(chunked.compiled.ok()) << chunked.compiled.message;
  // bf16 rounds each layer's output, so a sum taken in another order can land one step of bf16 away and a relu
  // flip downstream: the logits agree within bf16's precision, and the chunked runs repeat bit for bit.
  const ChunkStepResult whole = two_chunk_steps(kOneThread, "mixed_bfloat16");
  expect_near_all(chunked.logits, whole.logits, 3e-2, "logits");
  const ChunkStepResult again = two_chunk_steps(json{{"threads", 2}}, "mixed_bfloat16");
  EXPECT_EQ(again.logits, chunked.logits);
  EXPECT_EQ(again.gradients, chunked.gradients);
}

TEST(OnednnBatchChunks, AnInputGradientAsWinogradTilesAndABorderMatchesTheWholeBatch) {
  const json g = border_convolution_graph();
  const ChunkStepResult chunked = two_chunk_steps(json{{"threads", 2}}, "float32", g, {9, 13, 1});
  ASSERT_TRUE(chunked.compiled.ok()) << chunked.compiled.message;
  const ChunkStepResult whole = two_chunk_steps(kOneThread, "float32", g, {9, 13, 1});
  ASSERT_EQ(chunked.gradients.size(), whole.gradients.size());
  // The stem's gradients are made from the input gradient of "edge", its border included.
  expect_chunk_steps_close(chunked, whole, 2e-4);
  const ChunkStepResult again = two_chunk_steps(json{{"threads", 2}}, "float32", g, {9, 13, 1});
  EXPECT_EQ(again.logits, chunked.logits);
  EXPECT_EQ(again.gradients, chunked.gradients);

  // In mixed_bfloat16 the same convolution's weight gradient is float32 Winograd on float32 copies of each chunk
  // (a 7 x 11 output, where the bf16 kernel is the slower, on CPUs with the native AVX-512 bf16 kernel): against
  // bf16 on one thread (oneDNN's bf16 kernel) within 2 % of the gradient's norm, and bit for bit from run to run.
  const ChunkStepResult bf16 = two_chunk_steps(json{{"threads", 2}}, "mixed_bfloat16", g, {9, 13, 1});
  if (!bf16.compiled.ok()) {
    ASSERT_NE(bf16.compiled.message.find("needs a CPU with AVX-512"), std::string::npos) << bf16.compiled.message;
    GTEST_SKIP() << "float32 passed; this CPU cannot run mixed_bfloat16: " << bf16.compiled.message;
  }
  const ChunkStepResult bf16_whole = two_chunk_steps(kOneThread, "mixed_bfloat16", g, {9, 13, 1});
  for (const char* name : {"edge/kernel", "edge/bias"}) {
    const std::vector<float>&got = bf16.gradients.at(name), &want = bf16_whole.gradients.at(name);
    double diff = 0, norm = 0;
    for (size_t i = 0; i < want.size(); ++i) diff += (got[i] - want[i]) * (got[i] - want[i]), norm += want[i] * want[i];
    EXPECT_LT(std::sqrt(diff), 2e-2 * std::sqrt(norm)) << name << ": against bf16 on one thread, relative to its norm";
  }
  const ChunkStepResult bf16_again = two_chunk_steps(json{{"threads", 2}}, "mixed_bfloat16", g, {9, 13, 1});
  EXPECT_EQ(bf16_again.gradients, bf16.gradients);
}

namespace {

// The model of `manifest_path` (in the source tree) trained for two steps of 128 on two threads, in `precision`
// unless it is null: the lines of oneDNN's verbose log for the primitives that ran in training (forward_training
// or backward).
std::vector<std::string> training_primitives_run(const char* manifest_path, const char* precision) {
  using namespace ramjet::test;
  TempDir dir;
  auto manifest = nlohmann::json::parse(read_file(source_dir() / manifest_path));
  manifest.erase("export");
  manifest["train"]["backend"] = {{"type", "cpu"}, {"threads", 2}};
  if (precision != nullptr) manifest["train"]["precision"] = precision;
  manifest["train"]["epochs"] = 1;
  manifest["train"]["checkpoint"]["dir"] = (dir / "checkpoints").string();
  manifest["data"]["train"]["take"] = 256;
  manifest["data"]["eval"]["take"] = 256;
  write_file(dir / "train.json", manifest.dump());
  // Qualified: a test batch compiles other tests' helpers named `run` beside this one.
  const auto r = ramjet::test::run("env ONEDNN_VERBOSE=1 RAMJET_PLUGIN_PATH=" + quote(stock_plugin_dir().string()) +
                                   " " + quote(host_binary().string()) + " run " +
                                   quote((dir / "train.json").string()) + " --quiet");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> ran;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("onednn_verbose,", 0) == 0 && line.find(",exec,") != std::string::npos &&
        (line.find("backward") != std::string::npos || line.find("forward_training") != std::string::npos))
      ran.push_back(line);
  return ran;
}

}  // namespace

// The bench's ResNet trained briefly on two threads: every convolution ran on chunks of 16 examples of its batch
// of 128, none over the whole batch.
TEST(OnednnBatchChunks, TheResNetsConvolutionsRunOnChunksOfSixteen) {
  int chunked = 0;
  std::string whole;
  for (const std::string& line : training_primitives_run("bench/train/models/resnet.json", nullptr)) {
    if (line.find(",convolution,") == std::string::npos) continue;
    if (line.find(",mb16_") != std::string::npos) ++chunked;
    else whole += line + "\n";
  }
  // 2 training steps x 10 convolutions x 8 chunks, at least forward and backward-weights.
  EXPECT_GE(chunked, 2 * 10 * 8 * 2);
  EXPECT_EQ(whole, "") << "training convolutions over more than one chunk";
}

TEST(OnednnBatchChunks, PoolsInTheirConvolutionsChunksMatchTheWholeBatchOnOneThread) {
  const json g = pooled_convolution_graph();
  EXPECT_EQ(fused_away_at_compile(g, "float32"), "fused into their readers: c1, c2, c3");
  const ChunkStepResult chunked = two_chunk_steps(json{{"threads", 2}}, "float32", g);
  ASSERT_TRUE(chunked.compiled.ok()) << chunked.compiled.message;
  const ChunkStepResult whole = two_chunk_steps(kOneThread, "float32", g);
  ASSERT_EQ(chunked.gradients.size(), whole.gradients.size());
  expect_chunk_steps_close(chunked, whole, 2e-4);
  const ChunkStepResult again = two_chunk_steps(json{{"threads", 2}}, "float32", g);
  EXPECT_EQ(again.logits, chunked.logits);
  EXPECT_EQ(again.gradients, chunked.gradients);

  const ChunkStepResult bf16 = two_chunk_steps(json{{"threads", 2}}, "mixed_bfloat16", g);
  if (!bf16.compiled.ok()) {
    ASSERT_NE(bf16.compiled.message.find("needs a CPU with AVX-512"), std::string::npos) << bf16.compiled.message;
    GTEST_SKIP() << "float32 passed; this CPU cannot run mixed_bfloat16: " << bf16.compiled.message;
  }
  // With AMX, c2's and c3's small maps keep whole-batch layers, whose bf16 weight gradient is float32
  // (conv2d_choice.hpp's f32_weight_gradient_pays): measured on the ResNet, that beat chunking them.
  EXPECT_EQ(fused_away_at_compile(g, "mixed_bfloat16"),
            cpu_has_amx_bf16() ? "fused into their readers: c1" : "fused into their readers: c1, c2, c3");
  // The chunked stem (c1 reads one channel) computes in float32 (conv2d_chunked.cpp's float32_stem), the whole
  // batch's in bf16, so the two round differently: each must be as near float32's logits as bf16 allows.
  const ChunkStepResult bf16_whole = two_chunk_steps(kOneThread, "mixed_bfloat16", g);
  auto farthest = [](const std::vector<float>& a, const std::vector<float>& b) {
    double most = 0;
    for (size_t i = 0; i < a.size(); ++i) most = std::max(most, static_cast<double>(std::fabs(a[i] - b[i])));
    return most;
  };
  ASSERT_EQ(bf16.logits.size(), whole.logits.size());
  ASSERT_EQ(bf16_whole.logits.size(), whole.logits.size());
  EXPECT_LE(farthest(bf16.logits, whole.logits), 2 * farthest(bf16_whole.logits, whole.logits) + 1e-2)
      << "the chunked bf16 logits are farther from float32's than bf16's rounding explains";
  const ChunkStepResult bf16_again = two_chunk_steps(json{{"threads", 2}}, "mixed_bfloat16", g);
  EXPECT_EQ(bf16_again.logits, bf16.logits);
  EXPECT_EQ(bf16_again.gradients, bf16.gradients);
}

// Every window of the first pool a tie: with a zero kernel the first convolution's output is its bias everywhere,
// and the pool passes each window's gradient to one of its positions. The chunked pool (our own loops on AVX-512)
// must choose the one oneDNN's whole-batch pool chooses, the first: another would show in the kernel's gradient,
// which sums the input at the chosen positions. The second pool (5 x 5 -> 2 x 2) leaves a row and a column
// without gradient.
TEST(OnednnBatchChunks, AMaxPoolOfTiesPassesTheGradientToTheFirstMaximumAsOneThreadDoes) {
  const json g = Ir()
                     .input("x", {12, 12, 1})
                     .conv("c1", "x", 1, {10, 10, 16}, {{"filters", 16}, {"kernel", {3, 3}}})
                     .node("p1", "max_pool", {"c1"}, {5, 5, 16}, {{"pool", {2, 2}}})
                     .conv("c2", "p1", 16, {5, 5, 16},
                           {{"filters", 16}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}})
                     .node("p2", "max_pool", {"c2"}, {2, 2, 16}, {{"pool", {2, 2}}})
                     .node("flat", "flatten", {"p2"}, {64})
                     .dense("fc", "flat", 64, 3)
                     .classifier("fc");
  for (const char* precision : {"float32", "mixed_bfloat16"}) {
    SCOPED_TRACE(precision);
    std::map<std::string, std::vector<float>> grads[2];
    const json configs[2] = {json{{"threads", 2}}, kOneThread};
    for (int k = 0; k < 2; ++k) {
      Harness h(configs[k]);
      json options = adam_options(32);
      options["precision"] = precision;
      const Status compiled = h.compile(g, options);
      if (!compiled.ok() && std::string(precision) != "float32") {
        ASSERT_NE(compiled.message.find("needs a CPU with AVX-512"), std::string::npos) << compiled.message;
        GTEST_SKIP() << "float32 passed; this CPU cannot run mixed_bfloat16";
      }
      ASSERT_TRUE(compiled.ok()) << compiled.message;
      Example params = random_params(g, 43, 0.3f);
      const std::vector<float> zero(values(params, "c1/kernel").size(), 0.0f);
      put(params, "c1/kernel", g["params"]["c1/kernel"]["shape"].get<Shape>(), zero);
      ASSERT_TRUE(h.set_state("parameters", params).ok());
      std::mt19937 rng(5);
      Example batch = separable_batch(32, {12, 12, 1}, rng), out;
      ASSERT_TRUE(h.forward(batch, out, true).ok());
      ASSERT_TRUE(h.backward().ok());
      Example state = h.state("gradients");
      for (const char* name : {"c1/kernel", "c1/bias", "c2/kernel", "c2/bias"}) grads[k][name] = values(state, name);
    }
    const double tolerance = std::string(precision) == "float32" ? 2e-4 : 3e-2;
    for (const auto& [name, want] : grads[1]) {
      ASSERT_FALSE(want.empty()) << name;
      EXPECT_GT(*std::max_element(want.begin(), want.end()) - *std::min_element(want.begin(), want.end()), 0.0f)
          << name << ": a gradient of zeros proves nothing";
      expect_near_all(grads[0][name], want, tolerance, name.c_str());
    }
  }
}

// A convolution fused with its pool has no output of its own; tapped, it is built apart again and the tap sees
// what one thread computes. A training forward whose plan that rebuild dropped is gone: backward says so.
TEST(OnednnBatchChunks, ATappedConvolutionBeforeAPoolIsStillSeen) {
  const json g = pooled_convolution_graph();
  std::map<std::string, std::vector<float>> seen[2];
  const json configs[2] = {json{{"threads", 2}}, kOneThread};
  for (int k = 0; k < 2; ++k) {
    Harness h(configs[k]);
    ASSERT_TRUE(h.compile(g, adam_options(32)).ok());
    Example params = random_params(g, 41, 0.3f);
    ASSERT_TRUE(h.set_state("parameters", params).ok());
    std::mt19937 rng(7);
    Example batch = separable_batch(32, {12, 12, 1}, rng), out;
    ASSERT_TRUE(h.forward(batch, out, true).ok());
    TapLog log;
    ASSERT_TRUE(h.set_taps(json::array({"c1", "p1"}), &record_tap, &log).ok());
    if (k == 0) {
      const Status dropped = h.backward();
      EXPECT_EQ(dropped.code, RAMJET_ERR_INVALID_ARGUMENT) << dropped.message;
      EXPECT_NE(dropped.message.find("no training forward"), std::string::npos) << dropped.message;
    }
    ASSERT_TRUE(h.forward(batch, out, true).ok());
    EXPECT_TRUE(h.backward().ok());
    seen[k] = log.seen;
  }
  ASSERT_EQ(seen[0].count("c1"), 1u);
  ASSERT_EQ(seen[0]["c1"].size(), 32u * 10 * 10 * 16);
  EXPECT_GT(std::count(seen[0]["c1"].begin(), seen[0]["c1"].end(), 0.0f), 0) << "the relu left no zero";
  expect_near_all(seen[0]["c1"], seen[1]["c1"], 1e-5, "c1");
  expect_near_all(seen[0]["p1"], seen[1]["p1"], 1e-5, "p1");
}

namespace {

// Convolutions each read only by a batch norm (with relu6, relu, and nothing after it), so that each convolution
// sums its batch norm's statistics on its chunks (plugins/onednn/norm_link.hpp): a one-channel stem, a stride-2
// depthwise one and a 1x1.
json normalised_convolution_graph() {
  return Ir()
      .input("x", {12, 12, 1})
      .conv("stem", "x", 1, {12, 12, 16},
            {{"filters", 16}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}, {"use_bias", false}})
      .batch_norm("bn1", "stem", {12, 12, 16})
      .node("act1", "activation", {"bn1"}, {12, 12, 16}, {{"activation", "relu6"}})
      .conv("depthwise", "act1", 16, {6, 6, 16},
            {{"filters", 16}, {"kernel", {3, 3}}, {"groups", 16}, {"strides", {2, 2}}, {"padding", {0, 1, 0, 1}},
             {"use_bias", false}})
      .batch_norm("bn2", "depthwise", {6, 6, 16})
      .node("act2", "activation", {"bn2"}, {6, 6, 16}, {{"activation", "relu"}})
      .conv("point", "act2", 16, {6, 6, 32}, {{"filters", 32}, {"kernel", {1, 1}}, {"use_bias", false}})
      .batch_norm("bn3", "point", {6, 6, 32})
      .node("pool", "global_avg_pool", {"bn3"}, {32})
      .dense("fc", "pool", 32, 3)
      .classifier("fc");
}

struct NormStepsResult {
  Status compiled;
  std::string plan;  // the backend's debug line on the last plan it built
  std::vector<float> logits;
  std::map<std::string, std::vector<float>> gradients, parameters;
};

// Two training steps of normalised_convolution_graph on two threads, batch 32, the first followed by an update;
// `outputs` are graph outputs besides the logits (a convolution's output that is one has a reader besides its batch
// norm).
NormStepsResult normalised_steps(const char* precision, const std::vector<std::string>& outputs) {
  NormStepsResult r;
  json g = normalised_convolution_graph();
  for (const std::string& o : outputs) g["outputs"].push_back(o);
  DebugLines debug;
  {
    Harness h(json{{"threads", 2}});
    r.compiled = compile_on_two_threads(h, g, precision);
    if (r.compiled.ok()) {
      Example params = random_params(g, 43, 0.5f);
      EXPECT_TRUE(h.set_state("parameters", params).ok());
      for (uint32_t step = 1; step <= 2; ++step) {
        std::mt19937 rng(200 + step);
        Example batch = separable_batch(32, {12, 12, 1}, rng), out;
        const Status f = h.forward(batch, out, true);
        EXPECT_TRUE(f.ok()) << f.message;
        EXPECT_TRUE(h.backward().ok());
        if (step == 1) {
          EXPECT_TRUE(h.update(step, 0.01f).ok());
          continue;
        }
        r.logits = values(out, "fc");
        Example grads = h.state("gradients");
        for (const auto& [name, spec] : g["params"].items())
          if (name.find("/moving_") == std::string::npos) r.gradients[name] = values(grads, name);
        Example state = h.state("parameters");
        for (const auto& [name, spec] : g["params"].items()) r.parameters[name] = values(state, name);
      }
    }
  }
  const std::string log = debug.lines();
  const size_t at = log.rfind("training batch 32");
  if (at != std::string::npos) r.plan = log.substr(at, log.find('\n', at) - at);
  return r;
}

// The batch norms' statistics summed on their convolutions' chunks give the bits of the batch norms' own passes
// over the whole batch: outputs, gradients, and the moving statistics.
// `linked_norms`: the debug line's list of them (with AMX, the bf16 1x1 convolution runs over the whole batch: on
// its small map the weight gradient pays in float32, conv2d_choice.hpp).
void expect_norms_in_chunks_as_on_their_own(const char* precision, const std::string& linked_norms) {
  const NormStepsResult linked = normalised_steps(precision, {});
  if (std::string(precision) == "mixed_bfloat16" && linked.compiled.code == RAMJET_ERR_UNSUPPORTED)
    GTEST_SKIP() << "this CPU cannot run mixed_bfloat16: " << linked.compiled.message;
  ASSERT_TRUE(linked.compiled.ok()) << linked.compiled.message;
  EXPECT_NE(linked.plan.find("batch norms in their convolution's chunks: " + linked_norms), std::string::npos)
      << linked.plan;
  const NormStepsResult apart = normalised_steps(precision, {"stem", "depthwise", "point"});
  ASSERT_FALSE(apart.plan.empty());
  EXPECT_EQ(apart.plan.find("in their convolution's chunks"), std::string::npos) << apart.plan;
  EXPECT_EQ(linked.logits, apart.logits);
  ASSERT_EQ(linked.gradients.size(), 11u);  // 3 kernels, 3 gammas and betas, the dense's kernel and bias
  for (const auto& [name, g] : apart.gradients) EXPECT_EQ(linked.gradients.at(name), g) << name;
  for (const auto& [name, p] : apart.parameters) EXPECT_EQ(linked.parameters.at(name), p) << name;
}

}  // namespace

TEST(OnednnBatchChunks, BatchNormsInTheirConvolutionsChunksGiveTheBitsOfTheirOwnPasses) {
  expect_norms_in_chunks_as_on_their_own("float32", "bn1, bn2, bn3");
}

TEST(OnednnBatchChunks, Bf16BatchNormsInTheirConvolutionsChunksGiveTheBitsOfTheirOwnPasses) {
  expect_norms_in_chunks_as_on_their_own("mixed_bfloat16", cpu_has_amx_bf16() ? "bn1, bn2" : "bn1, bn2, bn3");
}

// The CNN of examples/fashion_mnist trained briefly on two threads: both max pools run in their convolutions'
// chunks of 16, and no relu passes over a whole unpooled map. On AVX-512 the pools are our own loops
// (max_pool_loops.hpp), which oneDNN's verbose log does not show: there no pooling primitive runs at all.
TEST(OnednnBatchChunks, TheCnnsPoolsRunInTheirConvolutionsChunks) {
  const bool own_loops = cpu_has_avx512();
  int chunked = 0, chunked_convolutions = 0;
  std::string whole;
  // float32: every CPU runs it (bf16 needs AVX-512).
  for (const std::string& line : training_primitives_run("examples/fashion_mnist/train.json", "float32")) {
    if (line.find(",pooling") != std::string::npos) {
      if (line.find(",mb16") != std::string::npos && !own_loops) ++chunked;
      else whole += line + "\n";
    }
    if (line.find(",convolution,") != std::string::npos && line.find(",mb16") != std::string::npos)
      ++chunked_convolutions;
    if (line.find(",eltwise,") != std::string::npos &&
        (line.find("x26x26") != std::string::npos || line.find("x11x11") != std::string::npos))
      whole += line + "\n";
  }
  // 2 training steps x 2 pools x 8 chunks, forward and backward.
  EXPECT_EQ(chunked, own_loops ? 0 : 2 * 2 * 8 * 2);
  // 2 training steps x 2 convolutions x 8 chunks, forward and backward-weights at least.
  EXPECT_GE(chunked_convolutions, 2 * 2 * 8 * 2);
  EXPECT_EQ(whole, "") << "pools or relus over the whole batch" << (own_loops ? ", or oneDNN's pool in chunks" : "");
}

// The same CNN in float32: the second convolution's input gradient (13 x 13 x 32) is Winograd's tiles over its top
// left 12 x 12 (a forward convolution of 64 channels into 32) and a border, never oneDNN's backward-data, whose
// tiles would cover 16 x 16.
TEST(OnednnBatchChunks, TheCnnsInputGradientIsWinogradTilesAndABorder) {
  if (!__builtin_cpu_supports("avx512f")) GTEST_SKIP() << "the border needs AVX-512, which this CPU lacks";
  int tiles = 0;
  std::string backward_data;
  for (const std::string& line : training_primitives_run("examples/fashion_mnist/train.json", "float32")) {
    if (line.find(",convolution,jit_wino") != std::string::npos &&
        line.find(",forward_training,") != std::string::npos && line.find("mb16_ic64oc32_ih12oh12") != std::string::npos)
      ++tiles;
    if (line.find(",backward_data,") != std::string::npos && line.find("ic32oc64_ih13oh11") != std::string::npos)
      backward_data += line + "\n";
  }
  EXPECT_EQ(tiles, 2 * 8) << "2 training steps x 8 chunks";
  EXPECT_EQ(backward_data, "");
}

// The same CNN in mixed_bfloat16: its stem (one input channel, pooled in its chunks) convolves in float32, forward
// and backward-weights, where oneDNN's bf16 kernels for one channel are slow; the second convolution in bf16.
TEST(OnednnBatchChunks, TheCnnsStemComputesInFloat32UnderMixedBfloat16) {
  if (!cpu_has_avx512())
    GTEST_SKIP() << "this CPU cannot run mixed_bfloat16 (no AVX-512)";
  int stem_f32 = 0, second_bf16 = 0;
  std::string stem_other;
  for (const std::string& line : training_primitives_run("examples/fashion_mnist/train.json", "mixed_bfloat16")) {
    if (line.find(",convolution,") == std::string::npos) continue;
    if (line.find("mb16_ic1oc32") != std::string::npos) {
      if (line.find("src_f32") != std::string::npos && line.find("dst_f32") != std::string::npos) ++stem_f32;
      else stem_other += line + "\n";
    }
    if (line.find("mb16_ic32oc64") != std::string::npos && line.find("src_bf16") != std::string::npos) ++second_bf16;
  }
  EXPECT_EQ(stem_f32, 2 * 8 * 2) << "2 training steps x 8 chunks, forward and backward-weights";
  EXPECT_EQ(stem_other, "");
  EXPECT_GE(second_bf16, 2 * 8 * 2);
}

// The same CNN in mixed_bfloat16: where oneDNN's bf16 weight-gradient kernel is the direct one for native AVX-512
// bf16 (not AMX's, not the emulation on plain AVX-512), the second convolution's weight gradient is float32
// Winograd on float32 copies of each chunk.
TEST(OnednnBatchChunks, TheCnnsBf16WeightGradientIsFloat32WinogradWithoutAmx) {
  if (!cpu_has_avx512())
    GTEST_SKIP() << "this CPU cannot run mixed_bfloat16 (no AVX-512)";
  if (!__builtin_cpu_supports("avx512bf16"))
    GTEST_SKIP() << "oneDNN emulates bf16 on this CPU: the float32 weight gradient is for its native bf16 kernel";
  int winograd = 0, amx = 0;
  std::string other;
  for (const std::string& line : training_primitives_run("examples/fashion_mnist/train.json", "mixed_bfloat16")) {
    if (line.find(",backward_weights,") == std::string::npos || line.find("ic32oc64_ih13oh11") == std::string::npos)
      continue;
    if (line.find(",jit_wino") != std::string::npos && line.find("src_f32") != std::string::npos) ++winograd;
    else if (line.find("amx") != std::string::npos) ++amx;
    else other += line + "\n";
  }
  if (amx > 0) GTEST_SKIP() << "this CPU's bf16 weight gradient is AMX's: the float32 copies do not apply";
  EXPECT_EQ(winograd, 2 * 8) << "2 training steps x 8 chunks";
  EXPECT_EQ(other, "");
}
