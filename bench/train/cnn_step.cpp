// How long one training step (forward + backward + Adam update) of the MNIST-shaped CNN takes on the oneDNN "cpu"
// backend: conv 3x3x32 relu -> max_pool 2 -> flatten -> dense 128 relu -> dense 10, batch 128, float32. Moved
// here from tests/onednn_training_test.cpp, which keeps the check that the loss falls; a timing is a measurement,
// not a pass/fail. Prints one JSON object (median, fastest and slowest step in ms).
//   ramjet_cnn_step [--steps N] [--warmup N] [--threads N] [--plugin-dir DIR]
#include "ramjet/plugin/backend.hpp"
#include "ramjet/plugin/example.hpp"
#include "ramjet/plugin/plugin_registry.hpp"
#include "ramjet/plugin/tensor.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <vector>

using namespace ramjet::core;
using nlohmann::json;
using Shape = std::vector<int64_t>;

namespace {

// The graph IR as the core writes it (what the tests' Ir helper builds).
json mnist_shaped_cnn() {
  json g = {{"inputs", {{{"name", "x"}, {"shape", {28, 28, 1}}, {"dtype", "float32"}}}},
            {"params",
             {{"conv2d/kernel", {{"shape", {3, 3, 1, 32}}}},
              {"conv2d/bias", {{"shape", {32}}}},
              {"dense/kernel", {{"shape", {5408, 128}}}},
              {"dense/bias", {{"shape", {128}}}},
              {"dense_1/kernel", {{"shape", {128, 10}}}},
              {"dense_1/bias", {{"shape", {10}}}}}},
            {"outputs", {"dense_1"}},
            {"labels", {{"name", "label"}, {"dtype", "int32"}}},
            {"loss", {{"op", "sparse_softmax_cross_entropy"}, {"input", "dense_1"}, {"labels", "label"}}}};
  auto node = [](const char* name, const char* op, const char* in, Shape shape, json attrs, json params) {
    json n = {{"name", name}, {"op", op}, {"inputs", {in}}, {"shape", shape}, {"attrs", attrs}};
    if (!params.empty()) n["params"] = params;
    return n;
  };
  auto dense = [](const std::string& activation, int64_t units) {
    return json{{"units", units}, {"use_bias", true}, {"activation", activation}};
  };
  auto weights = [](const std::string& name) {
    return json{{"kernel", name + "/kernel"}, {"bias", name + "/bias"}};
  };
  g["nodes"] = {
      node("conv2d", "conv2d", "x", {26, 26, 32}, {{"filters", 32}, {"kernel", {3, 3}}, {"activation", "relu"}},
           weights("conv2d")),
      node("max_pool2d", "max_pool", "conv2d", {13, 13, 32},
           {{"pool", {2, 2}}, {"strides", {2, 2}}, {"padding", {0, 0, 0, 0}}}, json::object()),
      node("flatten", "flatten", "max_pool2d", {5408}, json::object(), json::object()),
      node("dense", "dense", "flatten", {128}, dense("relu", 128), weights("dense")),
      node("dense_1", "dense", "dense", {10}, dense("linear", 10), weights("dense_1")),
  };
  return g;
}

int64_t count_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

void put_uniform(Example& e, const std::string& name, const Shape& shape, std::mt19937& rng, float lo, float hi) {
  auto t = make_tensor({kDLFloat, 32, 1}, shape);
  std::uniform_real_distribution<float> d(lo, hi);
  float* p = static_cast<float*>(t->dl_tensor.data);
  for (int64_t i = 0; i < count_of(shape); ++i) p[i] = d(rng);
  e.set(name, std::move(t));
}

// Two classes told apart by the image's mean (as the tests' separable_batch).
Example separable_batch(int64_t n, std::mt19937& rng) {
  Example e;
  const int64_t per = 28 * 28;
  put_uniform(e, "x", {n, 28, 28, 1}, rng, -1.0f, 1.0f);
  auto labels = make_tensor({kDLInt, 32, 1}, Shape{n});
  float* x = static_cast<float*>(e.find("x")->data);
  int32_t* l = static_cast<int32_t*>(labels->dl_tensor.data);
  for (int64_t i = 0; i < n; ++i) {
    l[i] = static_cast<int32_t>(rng() % 2);
    for (int64_t j = 0; j < per; ++j) x[i * per + j] += l[i] ? 0.3f : -0.3f;
  }
  e.set("label", std::move(labels));
  return e;
}

float loss_of(Example& out) { return *static_cast<const float*>(first_byte(*out.find("loss"))); }

}  // namespace

int main(int argc, char** argv) {
  int steps = 20, warmup = 4, threads = 0;
  std::string plugin_dir = RAMJET_BENCH_PLUGIN_DIR;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--steps") == 0) steps = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--warmup") == 0) warmup = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--threads") == 0) threads = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--plugin-dir") == 0) plugin_dir = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: %s [--steps N] [--warmup N] [--threads N] [--plugin-dir DIR]\n", argv[0]);
      return 2;
    }
  }
  if (steps < 1 || warmup < 0) {
    std::fprintf(stderr, "--steps must be at least 1 and --warmup at least 0\n");
    return 2;
  }
  try {
    const int64_t batch = 128;
    const json graph = mnist_shaped_cnn();
    PluginRegistry registry{DiscoveryOptions{{plugin_dir}, {}, {}}};
    CreateArgs args;
    if (threads > 0) args.config = {{"threads", threads}};
    args.where = "bench#/train";
    Backend backend(registry.component(RAMJET_KIND_BACKEND, "cpu"), args);
    auto program = backend.compile(
        graph, {{"batch", batch}, {"precision", "float32"},
                {"optimizer", {{"type", "adam"}, {"beta_1", 0.9}, {"beta_2", 0.999}, {"epsilon", 1e-7}}}});
    std::mt19937 rng(5);
    Example params;
    for (const auto& [name, spec] : graph["params"].items())
      put_uniform(params, name, spec["shape"].get<Shape>(), rng, -0.05f, 0.05f);
    program->set_state("parameters", params);
    std::vector<Example> batches;
    for (int i = 0; i < 4; ++i) batches.push_back(separable_batch(batch, rng));

    std::vector<double> ms;
    float first_loss = 0, last_loss = 0;
    for (int step = 1; step <= warmup + steps; ++step) {
      Example out;
      const auto t0 = std::chrono::steady_clock::now();
      const ramjet_forward_args forward{sizeof(ramjet_forward_args), RAMJET_ABI_VERSION, 1, 0,
                                        static_cast<uint64_t>(step), 0};
      program->forward(forward, batches[static_cast<size_t>(step % 4)], out);
      const ramjet_backward_args backward{sizeof(ramjet_backward_args), RAMJET_ABI_VERSION, 1.0f, 0,
                                          nullptr, nullptr, nullptr, nullptr};
      program->backward(backward);
      const ramjet_update_args update{sizeof(ramjet_update_args), RAMJET_ABI_VERSION, step, 0.001f, 1.0f};
      program->optimizer_update(update);
      const double elapsed = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (step > warmup) ms.push_back(elapsed);
      (step == 1 ? first_loss : last_loss) = loss_of(out);
    }
    std::sort(ms.begin(), ms.end());
    std::printf(
        "{\"model\": \"mnist_shaped_cnn\", \"batch\": %lld, \"threads\": %d, \"steps\": %d, \"median_step_ms\": %.3f, "
        "\"min_step_ms\": %.3f, \"max_step_ms\": %.3f, \"samples_per_s\": %.1f, \"first_loss\": %.4f, "
        "\"last_loss\": %.4f}\n",
        static_cast<long long>(batch), threads, steps, ms[ms.size() / 2], ms.front(), ms.back(),
        1000.0 * static_cast<double>(batch) / ms[ms.size() / 2], first_loss, last_loss);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ramjet_cnn_step: %s\n", e.what());
    return 1;
  }
  return 0;
}
