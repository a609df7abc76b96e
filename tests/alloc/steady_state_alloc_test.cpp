// The cpu backend's steady-state training step allocates nothing of its own: after warm-up, forward + backward +
// optimizer update on the Fashion-MNIST CNN make no call to operator new except from inside oneDNN. This executable
// replaces the global operator new and exports it, so the plugin, oneDNN and libstdc++ all resolve to the counting
// one; each call is attributed by its return address. oneDNN 2.x builds a small argument map inside every
// primitive execution (its C API included), which no caller can avoid; those calls are counted apart and printed.
#include "ramjet/plugin/backend.hpp"
#include "ramjet/model/graph.hpp"
#include "ramjet/plan/pipeline_manifest.hpp"
#include "ramjet/plugin/plugin_registry.hpp"

#include <gtest/gtest.h>

#include <link.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <new>
#include <string>

namespace {
std::atomic<int64_t> g_news{0};        // calls from anywhere but oneDNN
std::atomic<int64_t> g_onednn_news{0};  // calls whose return address lies in libdnnl
std::atomic<uintptr_t> g_dnnl_lo{0}, g_dnnl_hi{0};

// Where libdnnl's code is mapped (once the backend has loaded it).
void find_onednn() {
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void*) {
        if (info->dlpi_name == nullptr || std::strstr(info->dlpi_name, "libdnnl") == nullptr) return 0;
        uintptr_t lo = UINTPTR_MAX, hi = 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
          lo = std::min<uintptr_t>(lo, info->dlpi_addr + ph.p_vaddr);
          hi = std::max<uintptr_t>(hi, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
        }
        g_dnnl_lo = lo;
        g_dnnl_hi = hi;
        return 1;
      },
      nullptr);
}

void count(void* caller) {
  const auto at = reinterpret_cast<uintptr_t>(caller);
  if (at >= g_dnnl_lo.load(std::memory_order_relaxed) && at < g_dnnl_hi.load(std::memory_order_relaxed))
    g_onednn_news.fetch_add(1, std::memory_order_relaxed);
  else
    g_news.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

// These replacements allocate with malloc and free with free; GCC sees only the standard new/delete pairing and
// warns that free() meets memory from operator new.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void* operator new(std::size_t size) {
  count(__builtin_return_address(0));
  if (void* p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) {
  count(__builtin_return_address(0));
  if (void* p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t size, std::align_val_t align) {
  count(__builtin_return_address(0));
  const std::size_t a = static_cast<std::size_t>(align);
  if (void* p = std::aligned_alloc(a, (size + a - 1) / a * a)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size, std::align_val_t align) {
  count(__builtin_return_address(0));
  const std::size_t a = static_cast<std::size_t>(align);
  if (void* p = std::aligned_alloc(a, (size + a - 1) / a * a)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

using namespace ramjet::core;

namespace {

// Five training steps of `graph` after three of warm-up, in float32 and mixed_bfloat16: no operator new outside
// oneDNN's execute. Returns why mixed_bfloat16 could not be checked on this CPU (empty when it was).
std::string expect_steady_state(const Graph& graph, Example& batch, int64_t batch_size) {
  PluginRegistry registry{DiscoveryOptions{{RAMJET_TEST_PLUGIN_DIR}, {}, {}}};
  std::string refused;
  for (const char* precision : {"float32", "mixed_bfloat16"}) {
    SCOPED_TRACE(precision);
    CreateArgs args;
    args.config = {{"threads", 2}};
    Backend backend(registry.component(RAMJET_KIND_BACKEND, "cpu"), args);
    std::unique_ptr<Program> program;
    try {
      program = backend.compile(graph.ir, {{"batch", batch_size}, {"precision", precision}, {"optimizer", {{"type", "adam"}}}});
    } catch (const std::exception& e) {
      // The backend refuses mixed_bfloat16 on a CPU without AVX-512 (plugins/onednn/options.cpp): nothing to count.
      if (std::strcmp(precision, "mixed_bfloat16") != 0 || std::strstr(e.what(), "needs a CPU with AVX-512") == nullptr)
        throw;
      refused = e.what();
      continue;
    }
    Example initial = initial_parameters(graph.ir, 3);
    program->set_state("parameters", initial);
    Example outputs;
    auto step = [&](int64_t n) {
      const ramjet_forward_args forward{sizeof(ramjet_forward_args), RAMJET_ABI_VERSION, 1, 0, static_cast<uint64_t>(n), n};
      program->forward(forward, batch, outputs);
      const ramjet_backward_args backward{sizeof(ramjet_backward_args), RAMJET_ABI_VERSION, 1.0f, 0, nullptr, nullptr, nullptr, nullptr};
      program->backward(backward);
      const ramjet_update_args update{sizeof(ramjet_update_args), RAMJET_ABI_VERSION, n + 1, 1e-3f, 1.0f};
      program->optimizer_update(update);
    };
    for (int64_t n = 0; n < 3; ++n) step(n);  // warm-up: plans, scratchpads, oneDNN's kernel caches
    find_onednn();
    EXPECT_NE(g_dnnl_hi.load(), 0u) << "libdnnl is not mapped";
    const int64_t before = g_news.load(), onednn_before = g_onednn_news.load();
    for (int64_t n = 3; n < 8; ++n) step(n);
    EXPECT_EQ(g_news.load() - before, 0) << "operator new calls outside oneDNN in 5 steady-state steps";
    std::printf("[ %s ] operator new calls inside oneDNN's execute, per step: %.1f\n", precision,
                static_cast<double>(g_onednn_news.load() - onednn_before) / 5);
    // The counter sees the plugin's allocations at all (so a zero above means something): compiling does allocate.
    const int64_t compiling = g_news.load();
    auto again = backend.compile(graph.ir, {{"batch", batch_size / 2}, {"precision", precision}});
    EXPECT_GT(g_news.load() - compiling, 0);
  }
  return refused;
}

// expect_steady_state for a classifier of one-channel side x side images, on a batch of 32 with ten classes.
void expect_an_image_classifier_steps_without_allocating(const Graph& graph, int64_t side) {
  Example batch;
  const std::vector<int64_t> image_shape{32, side, side, 1}, label_shape{32};
  batch.set("image", make_tensor({kDLFloat, 32, 1}, image_shape));
  batch.set("label", make_tensor({kDLInt, 32, 1}, label_shape));
  float* pixels = static_cast<float*>(batch.find("image")->data);
  int32_t* labels = static_cast<int32_t*>(batch.find("label")->data);
  for (int64_t i = 0; i < 32 * side * side; ++i) pixels[i] = static_cast<float>(i % 255) / 255.0f;
  for (int64_t i = 0; i < 32; ++i) labels[i] = static_cast<int32_t>(i % 10);
  const std::string refused = expect_steady_state(graph, batch, 32);
  if (!refused.empty()) GTEST_SKIP() << "float32 checked; mixed_bfloat16 not, this CPU cannot run it: " << refused;
}

}  // namespace

TEST(SteadyState, ATrainingStepOnTheCpuBackendAllocatesNothing) {
  const nlohmann::json model = nlohmann::json::parse(R"({
    "model": {"input": {"image": [28, 28, 1]},
              "layers": [{"type": "conv2d", "filters": 32, "kernel": 3, "activation": "relu"},
                         {"type": "max_pool", "pool": 2},
                         {"type": "conv2d", "filters": 64, "kernel": 3, "activation": "relu"},
                         {"type": "max_pool", "pool": 2},
                         {"type": "flatten"}, {"type": "dropout", "rate": 0.2},
                         {"type": "dense", "units": 128, "activation": "relu"},
                         {"type": "dense", "units": 10}],
              "loss": {"type": "sparse_softmax_cross_entropy"}}})");
  const Graph graph = build_graph(model["model"], Origin{"alloc.json"});
  expect_an_image_classifier_steps_without_allocating(graph, 28);
}

// A residual block as the bench's ResNet has them: batch norms on the backend's own kernels (their working memory
// made at compile time), a relu fused into a batch norm and one into the residual add.
TEST(SteadyState, AResidualBlockWithBatchNormsAllocatesNothing) {
  const nlohmann::json model = nlohmann::json::parse(R"({
    "model": {"input": {"image": [12, 12, 1]},
              "layers": [{"type": "conv2d", "filters": 32, "kernel": 3, "padding": "same", "use_bias": false},
                         {"type": "batch_norm"}, {"type": "relu", "name": "stem"},
                         {"type": "conv2d", "filters": 32, "kernel": 3, "padding": "same", "use_bias": false},
                         {"type": "batch_norm"}, {"type": "relu"},
                         {"type": "conv2d", "filters": 32, "kernel": 3, "padding": "same", "use_bias": false},
                         {"type": "batch_norm", "name": "bn2"},
                         {"type": "add", "inputs": ["stem", "bn2"]}, {"type": "relu"},
                         {"type": "global_avg_pool"}, {"type": "dense", "units": 10}],
              "loss": {"type": "sparse_softmax_cross_entropy"}}})");
  const Graph graph = build_graph(model["model"], Origin{"alloc.json"});
  expect_an_image_classifier_steps_without_allocating(graph, 12);
}

TEST(SteadyState, ATransformerTrainingStepAllocatesNothing) {
  const nlohmann::json model = nlohmann::json::parse(R"({
    "model": {"input": {"tokens": {"shape": [16], "dtype": "int32"}},
              "layers": [{"type": "embedding", "input_dim": 50, "output_dim": 32},
                         {"type": "position_embedding", "sequence_length": 16, "name": "pos"},
                         {"type": "layer_norm"},
                         {"type": "multi_head_attention", "num_heads": 4, "key_dim": 8, "use_causal_mask": true,
                          "dropout": 0.1, "name": "att"},
                         {"type": "add", "inputs": ["pos", "att"], "name": "res"},
                         {"type": "rms_norm"},
                         {"type": "dense", "units": 64, "activation": "gelu"},
                         {"type": "dense", "units": 32, "name": "mlp"},
                         {"type": "add", "inputs": ["res", "mlp"]},
                         {"type": "dense", "units": 50}],
              "loss": {"type": "sparse_softmax_cross_entropy", "labels": "labels", "ignore_label": -1}}})");
  const Graph graph = build_graph(model["model"], Origin{"alloc.json"});
  Example batch;
  const std::vector<int64_t> shape{8, 16};
  batch.set("tokens", make_tensor({kDLInt, 32, 1}, shape));
  batch.set("labels", make_tensor({kDLInt, 32, 1}, shape));
  int32_t* tokens = static_cast<int32_t*>(batch.find("tokens")->data);
  int32_t* labels = static_cast<int32_t*>(batch.find("labels")->data);
  for (int64_t i = 0; i < 8 * 16; ++i) tokens[i] = static_cast<int32_t>((i * 7) % 50), labels[i] = static_cast<int32_t>((i * 3) % 50);
  const std::string refused = expect_steady_state(graph, batch, 8);
  if (!refused.empty()) GTEST_SKIP() << "float32 checked; mixed_bfloat16 not, this CPU cannot run it: " << refused;
}
