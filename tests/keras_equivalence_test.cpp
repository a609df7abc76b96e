// Same layouts, same math: a model built from a manifest's `model` section, given ramjet's initial weights, must give
// Keras the logits it gives ramjet's cpu backend. tests/tools/keras_from_ir.py builds the Keras model from the
// graph IR with Keras's own layers (Embedding, LayerNormalization, MultiHeadAttention, Dense, Conv1D, ...) and loads
// the weights unchanged. Skips, saying why, without TensorFlow in the venv (`./dev bench` installs it).
#include "onednn_harness.hpp"
#include "onednn_models.hpp"
#include "ramjet/model/graph.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>

using namespace ramjet::core;
using namespace ramjet::test;
using namespace ramjet::test::cpu_backend;

namespace {

std::optional<std::string> keras_missing() {
  const fs::path python = venv_python();
  if (!fs::exists(python)) return "no Python venv at " + python.string() + "; `./dev bench` creates it with TensorFlow";
  if (run(quote(python.string()) + " -c 'import keras, tensorflow' 2>/dev/null").exit_code != 0)
    return "TensorFlow/Keras is not installed in " + python.string() + "; `./dev bench` installs it";
  return std::nullopt;
}

void write_raw(const fs::path& file, const void* data, size_t bytes) {
  std::ofstream out(file, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
}

// ramjet's logits and Keras's for one batch of `model`, with ramjet's initial weights (seed 5) in both.
std::pair<std::vector<float>, std::vector<float>> both_logits(const json& model, int64_t batch, int64_t vocabulary) {
  const json ir = build_graph(model, Origin{"test.json"}).ir;
  Example params = initial_parameters(ir, 5);
  Harness h;
  const Status compiled = h.compile(ir, adam_options(batch));
  EXPECT_TRUE(compiled.ok()) << compiled.message;
  EXPECT_TRUE(h.set_state("parameters", params).ok());

  TempDir dir;
  json c = {{"ir", ir}, {"params", json::object()}, {"inputs", json::object()}, {"output", "keras.bin"}};
  for (size_t i = 0; i < params.entries.size(); ++i) {
    const DLTensor& t = params.entries[i].tensor->dl_tensor;
    const std::string file = "p" + std::to_string(i) + ".bin";
    write_raw(dir / file, t.data, static_cast<size_t>(element_count(t)) * sizeof(float));
    c["params"][params.entries[i].name] = {{"file", file}, {"shape", Shape(t.shape, t.shape + t.ndim)}};
  }
  std::mt19937 rng(11);
  Example inputs;
  for (const auto& in : ir["inputs"]) {
    Shape shape{batch};
    for (const auto& d : in["shape"]) shape.push_back(d.get<int64_t>());
    const std::string name = in["name"], file = name + ".bin";
    if (in["dtype"] == "int32") {
      std::vector<int32_t> ids(static_cast<size_t>(count_of(shape)));
      for (auto& id : ids) id = static_cast<int32_t>(rng() % static_cast<uint32_t>(vocabulary));
      put(inputs, name, kI32, shape, ids);
      write_raw(dir / file, ids.data(), ids.size() * sizeof(int32_t));
      c["inputs"][name] = {{"file", file}, {"shape", shape}, {"dtype", "int32"}};
    } else {
      const std::vector<float> x = uniform(static_cast<size_t>(count_of(shape)), rng);
      put(inputs, name, shape, x);
      write_raw(dir / file, x.data(), x.size() * sizeof(float));
      c["inputs"][name] = {{"file", file}, {"shape", shape}, {"dtype", "float32"}};
    }
  }
  Example out;
  const Status forward = h.forward(inputs, out, false);
  EXPECT_TRUE(forward.ok()) << forward.message;
  const std::vector<float> ours = values(out, ir["outputs"][0]);

  write_file(dir / "case.json", c.dump());
  const auto r = run(quote(venv_python().string()) + " " +
                     quote((source_dir() / "tests/tools/keras_from_ir.py").string()) + " --case " +
                     quote(dir.path().string()) + " 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::vector<float> theirs(ours.size());
  std::ifstream in(dir / "keras.bin", std::ios::binary);
  in.read(reinterpret_cast<char*>(theirs.data()), static_cast<std::streamsize>(theirs.size() * sizeof(float)));
  EXPECT_EQ(in.gcount(), static_cast<std::streamsize>(theirs.size() * sizeof(float))) << r.output;
  return {ours, theirs};
}

void expect_close(const std::vector<float>& ours, const std::vector<float>& theirs) {
  ASSERT_EQ(ours.size(), theirs.size());
  double worst = 0, scale = 0;
  for (size_t i = 0; i < ours.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::fabs(ours[i] - theirs[i])));
    scale = std::max(scale, static_cast<double>(std::fabs(theirs[i])));
  }
  EXPECT_GT(scale, 1e-3) << "the logits are all near zero: the comparison would prove nothing";
  EXPECT_LT(worst, 1e-4 * std::max(1.0, scale)) << "largest |ramjet - Keras| over " << ours.size() << " logits";
  ::testing::Test::RecordProperty("largest_difference", std::to_string(worst));
}

json block(const std::string& in, int b, int64_t width, int64_t heads) {
  const std::string p = "b" + std::to_string(b) + "_";
  return json::array({{{"type", "layer_norm"}, {"name", p + "norm1"}, {"inputs", in}, {"epsilon", 1e-5}},
                      {{"type", "multi_head_attention"}, {"name", p + "attention"}, {"num_heads", heads},
                       {"key_dim", width / heads}, {"use_causal_mask", true}},
                      {{"type", "add"}, {"name", p + "residual1"}, {"inputs", {in, p + "attention"}}},
                      {{"type", "layer_norm"}, {"name", p + "norm2"}, {"epsilon", 1e-5}},
                      {{"type", "dense"}, {"name", p + "mlp_in"}, {"units", 4 * width}, {"activation", "gelu"}},
                      {{"type", "dense"}, {"name", p + "mlp_out"}, {"units", width}},
                      {{"type", "add"}, {"name", p + "residual2"}, {"inputs", {p + "residual1", p + "mlp_out"}}}});
}

}  // namespace

TEST(KerasEquivalence, ADecoderOnlyTransformerGivenRamjetsWeightsGivesKerasLogits) {
  if (auto why = keras_missing()) GTEST_SKIP() << *why;
  const int64_t vocabulary = 23, width = 16;
  json layers = {{{"type", "embedding"}, {"name", "tokens_in"}, {"input_dim", vocabulary}, {"output_dim", width}},
                 {{"type", "position_embedding"}, {"name", "positions"}, {"sequence_length", 12}}};
  std::string last = "positions";
  for (int b = 0; b < 2; ++b) {
    for (const auto& l : block(last, b, width, 4)) layers.push_back(l);
    last = "b" + std::to_string(b) + "_residual2";
  }
  layers.push_back({{"type", "layer_norm"}, {"name", "final_norm"}, {"epsilon", 1e-5}});
  layers.push_back({{"type", "dense"}, {"name", "logits"}, {"units", vocabulary}});
  const json model = {{"input", {{"tokens", {{"shape", {10}}, {"dtype", "int32"}}}}},
                      {"layers", layers},
                      {"loss", {{"type", "sparse_softmax_cross_entropy"}, {"labels", "labels"}}}};
  const auto [ours, theirs] = both_logits(model, 3, vocabulary);
  expect_close(ours, theirs);
}

TEST(KerasEquivalence, TheOtherSequenceLayersGiveKerasOutputs) {
  if (auto why = keras_missing()) GTEST_SKIP() << *why;
  const json model = {
      {"input", {{"q", {6, 8}}, {"v", {7, 5}}}},
      {"layers",
       {{{"type", "rms_norm"}, {"name", "n"}, {"inputs", "q"}},
        {{"type", "conv1d"}, {"name", "c"}, {"filters", 8}, {"kernel", 3}, {"padding", "causal"}, {"activation", "swish"}},
        {{"type", "multi_head_attention"}, {"name", "cross"}, {"inputs", {"c", "v"}}, {"num_heads", 2}, {"key_dim", 3},
         {"value_dim", 4}, {"output_shape", 8}},
        {{"type", "matmul"}, {"name", "m"}, {"inputs", {"cross", "n"}}, {"transpose_b", true}},  // [6, 6]
        {{"type", "leaky_relu"}, {"name", "lr"}},
        {{"type", "transpose"}, {"name", "t"}, {"perm", {1, 0}}},
        {{"type", "multiply"}, {"name", "mul"}, {"inputs", {"t", "m"}}},
        {{"type", "subtract"}, {"name", "sub"}, {"inputs", {"mul", "lr"}}},
        {{"type", "dense"}, {"name", "d"}, {"units", 5}, {"activation", "elu"}},
        {{"type", "global_max_pool"}, {"name", "pool"}},
        {{"type", "dense"}, {"name", "out"}, {"units", 4}, {"activation", "softplus"}}}},
      {"loss", {{"type", "mse"}}}};
  const auto [ours, theirs] = both_logits(model, 2, 0);
  expect_close(ours, theirs);
}

TEST(KerasEquivalence, UpsamplingLayersGiveKerasOutputs) {
  // Conv2DTranspose ("same" with output_padding, a kernel smaller than its stride, "valid"), UpSampling2D (bilinear
  // and nearest) and Resizing (bilinear down by about 3, nearest): ramjet's rules and Keras's must agree on every
  // size and every sampled pixel.
  if (auto why = keras_missing()) GTEST_SKIP() << *why;
  const json model = {
      {"input", {{"x", {5, 6, 3}}}},
      {"layers",
       {{{"type", "conv2d_transpose"}, {"name", "t1"}, {"filters", 4}, {"kernel", 3}, {"strides", 2},
         {"padding", "same"}, {"output_padding", {1, 0}}, {"activation", "tanh"}},                     // [10, 11, 4]
        {{"type", "upsampling2d"}, {"name", "u1"}, {"interpolation", "bilinear"}},                    // [20, 22, 4]
        {{"type", "resize"}, {"name", "r1"}, {"height", 7}, {"width", 9}},                            // [7, 9, 4]
        {{"type", "conv2d_transpose"}, {"name", "t2"}, {"filters", 3}, {"kernel", {1, 2}}, {"strides", 3},
         {"use_bias", false}},                                                                         // [21, 27, 3]
        {{"type", "upsampling2d"}, {"name", "u2"}, {"size", {1, 2}}},                                 // [21, 54, 3]
        {{"type", "resize"}, {"name", "r2"}, {"height", 8}, {"width", 13}, {"interpolation", "nearest"}},
        {{"type", "conv2d_transpose"}, {"name", "t3"}, {"filters", 2}, {"kernel", 3}}}},             // [10, 15, 2]
      {"loss", {{"type", "mse"}}}};
  const auto [ours, theirs] = both_logits(model, 2, 0);
  expect_close(ours, theirs);
}

TEST(KerasEquivalence, PaddingCroppingDepthToSpaceAndConcatOnAnyAxisGiveKerasOutputs) {
  if (auto why = keras_missing()) GTEST_SKIP() << *why;
  // Keras's ZeroPadding2D, Cropping2D, tf.nn.depth_to_space and Concatenate(axis) with the batch axis counted.
  const json model = {
      {"input", {{"a", {4, 5, 8}}, {"b", {3, 5, 8}}}},
      {"layers",
       {{{"type", "zero_padding2d"}, {"name", "pad"}, {"inputs", "a"}, {"padding", {{1, 2}, {0, 3}}}},  // [7, 8, 8]
        {{"type", "cropping2d"}, {"name", "crop"}, {"cropping", {{2, 1}, {3, 0}}}},                        // [4, 5, 8]
        {{"type", "concat"}, {"name", "rows"}, {"inputs", {"crop", "b"}}, {"axis", 1}},                   // [7, 5, 8]
        {{"type", "concat"}, {"name", "cols"}, {"inputs", {"b", "a"}}, {"axis", -3}},                     // [7, 5, 8]
        {{"type", "concat"}, {"name", "both"}, {"inputs", {"rows", "cols"}}, {"axis", 2}},                // [7, 10, 8]
        {{"type", "depth_to_space"}, {"name", "d2s"}, {"block_size", 2}},                                 // [14, 20, 2]
        {{"type", "dense"}, {"name", "mix"}, {"units", 3}, {"activation", "tanh"}},
        {{"type", "flatten"}, {"name", "flat"}},
        {{"type", "dense"}, {"name", "out"}, {"units", 4}}}},
      {"loss", {{"type", "mse"}}}};
  const auto [ours, theirs] = both_logits(model, 2, 0);
  expect_close(ours, theirs);
}

TEST(KerasEquivalence, TheDeblurringUNetGivesKerasOutputs) {
  // examples/deblur's model as it ships: Conv2D "same", MaxPooling2D, Conv2DTranspose, Concatenate skips and the
  // residual Add, given ramjet's initial weights.
  if (auto why = keras_missing()) GTEST_SKIP() << *why;
  const json manifest = json::parse(read_file(source_dir() / "examples" / "deblur" / "pipeline.json"));
  const auto [ours, theirs] = both_logits(manifest.at("model"), 2, 0);
  ASSERT_EQ(ours.size(), 2u * 28 * 28);
  expect_close(ours, theirs);
}
