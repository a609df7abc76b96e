// The cpu backend's sequence-model layers (embedding, position_embedding, layer_norm, rms_norm,
// multi_head_attention, matmul, multiply, subtract, transpose, conv1d, dense on sequences, pooling over time, the
// new activations) and losses (token-level cross-entropy with ignore_label and label smoothing, categorical and
// binary cross-entropy): gradients against finite differences, forward values against reference formulas, and
// mixed bfloat16 against float32. Graphs are built from manifest `model` sections by the core, as a run builds them.
#include "gradient_check.hpp"
#include "onednn_harness.hpp"
#include "onednn_models.hpp"
#include "sequence_models.hpp"
#include "ramjet/model/graph.hpp"
#include "ramjet/plugin/tensor.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace ramjet::core;
using namespace ramjet::test::cpu_backend;

namespace {

json ir_of(const json& model) { return build_graph(model, Origin{"test.json"}).ir; }

json sparse_loss(json extra = json::object()) {
  extra["type"] = "sparse_softmax_cross_entropy";
  return extra;
}

void check(const json& model, int64_t vocabulary = 11, int64_t classes = 5, const GradCheck& c = {}) {
  const json ir = ir_of(model);
  expect_gradients_match(ir, batch_for_graph(ir, 3, vocabulary, classes, 17), 3, c);
}

}  // namespace

// ---- gradients ------------------------------------------------------------------------------------------------

TEST(OnednnSequence, DenseOnASequenceIsDenseOnEveryPosition) {
  check({{"input", {{"x", {4, 6}}}},
         {"layers", {{{"type", "dense"}, {"units", 7}, {"activation", "tanh"}}, {{"type", "dense"}, {"units", 5}}}},
         {"loss", sparse_loss()}});
}

TEST(OnednnSequence, EmbeddingPositionsLayerNormAndTokenCrossEntropy) {
  check({{"input", {{"tokens", {{"shape", {6}}, {"dtype", "int32"}}}}},
         {"layers",
          {{{"type", "embedding"}, {"input_dim", 11}, {"output_dim", 8}},
           {{"type", "position_embedding"}, {"sequence_length", 8}},
           {{"type", "layer_norm"}},
           {{"type", "dense"}, {"units", 11}}}},
         {"loss", sparse_loss()}},
        11, 11);
}

TEST(OnednnSequence, RmsNormAndTheNewActivations) {
  for (const char* activation : {"swish", "elu", "softplus", "leaky_relu", "gelu"}) {
    SCOPED_TRACE(activation);
    check({{"input", {{"x", {4, 6}}}},
           {"layers",
            {{{"type", "rms_norm"}},
             {{"type", "dense"}, {"units", 7}, {"activation", activation}},
             {{"type", activation}},
             {{"type", "dense"}, {"units", 5}}}},
           {"loss", sparse_loss()}});
  }
}

TEST(OnednnSequence, CausalSelfAttention) { check(causal_attention_model(), 11, 5, attention_check()); }

TEST(OnednnSequence, CrossAttentionWithQueryValueAndKey) { check(cross_attention_model(), 11, 5, attention_check()); }

TEST(OnednnSequence, MatmulMultiplySubtractAndTranspose) {
  check({{"input", {{"x", {4, 6}}}},
         {"layers",
          {{{"type", "dense"}, {"units", 6}, {"name", "a"}},
           {{"type", "dense"}, {"units", 6}, {"name", "b"}, {"inputs", "x"}},
           {{"type", "matmul"}, {"inputs", {"a", "b"}}, {"transpose_b", true}, {"name", "ab"}},  // [4, 4]
           {{"type", "matmul"}, {"inputs", {"ab", "a"}}, {"transpose_a", true}, {"name", "aba"}},  // [4, 6]
           {{"type", "multiply"}, {"inputs", {"aba", "b"}}, {"name", "m"}},
           {{"type", "subtract"}, {"inputs", {"m", "a"}}, {"name", "s"}},
           {{"type", "transpose"}, {"perm", {1, 0}}},  // [6, 4]
           {{"type", "dense"}, {"units", 5}}}},
         {"loss", sparse_loss()}});
}

TEST(OnednnSequence, Conv1dAndPoolingOverTime) {
  for (const char* padding : {"valid", "same", "causal"}) {
    SCOPED_TRACE(padding);
    check({{"input", {{"x", {9, 4}}}},
           {"layers",
            {{{"type", "conv1d"}, {"filters", 6}, {"kernel", 3}, {"padding", padding}, {"activation", "relu"}},
             {{"type", "conv1d"}, {"filters", 4}, {"kernel", 2}, {"dilation", 2}, {"padding", padding}, {"name", "c"}},
             {{"type", "global_max_pool"}, {"name", "gmax"}},
             {{"type", "global_avg_pool"}, {"inputs", "c"}, {"name", "gavg"}},
             {{"type", "concat"}, {"inputs", {"gmax", "gavg"}}},
             {{"type", "dense"}, {"units", 5}}}},
           {"loss", sparse_loss()}});
  }
}

TEST(OnednnSequence, LossesIgnoreLabelsSmoothLabelsAndReadSoftOrBinaryTargets) {
  const json layers = {{{"type", "dense"}, {"units", 5}}};
  check({{"input", {{"x", {4, 6}}}}, {"layers", layers}, {"loss", sparse_loss({{"label_smoothing", 0.2}})}});
  check({{"input", {{"x", {4, 6}}}}, {"layers", layers},
         {"loss", {{"type", "categorical_cross_entropy"}, {"label_smoothing", 0.1}}}});
  check({{"input", {{"x", {4, 6}}}}, {"layers", layers}, {"loss", {{"type", "binary_cross_entropy"}}}});
}

// ---- forward values ------------------------------------------------------------------------------------------

TEST(OnednnSequence, IgnoredPositionsCountForNothingInLossAccuracyOrGradient) {
  const json ir = ir_of({{"input", {{"x", {4, 3}}}},
                         {"layers", {{{"type", "dense"}, {"units", 5}}}},
                         {"loss", sparse_loss({{"ignore_label", -1}})}});
  Harness h;
  ASSERT_TRUE(h.compile(ir, adam_options(2)).ok());
  Example params = random_params(ir, 3);
  ASSERT_TRUE(h.set_state("parameters", params).ok());
  std::mt19937 rng(5);
  Example in;
  const std::vector<float> x = uniform(24, rng);
  put(in, "x", {2, 4, 3}, x);
  put(in, "label", kI32, {2, 4}, std::vector<int32_t>{1, -1, 3, -1, 0, 4, -1, 2});
  Example out;
  ASSERT_TRUE(h.forward(in, out, true).ok());
  const float loss = scalar(out, "loss");
  EXPECT_EQ(*static_cast<const int32_t*>(out.find("counted")->data), 5);
  // The mean over the five counted positions, computed here from the logits the forward returned.
  const std::vector<float> logits = values(out, "dense");
  const std::vector<int32_t> labels{1, -1, 3, -1, 0, 4, -1, 2};
  double total = 0;
  int correct = 0;
  for (size_t r = 0; r < 8; ++r) {
    if (labels[r] < 0) continue;
    double sum = 0;
    size_t best = 0;
    for (size_t k = 0; k < 5; ++k) {
      sum += std::exp(static_cast<double>(logits[r * 5 + k]));
      if (logits[r * 5 + k] > logits[r * 5 + best]) best = k;
    }
    total += std::log(sum) - logits[r * 5 + static_cast<size_t>(labels[r])];
    correct += static_cast<int>(best) == labels[r];
  }
  EXPECT_NEAR(loss, total / 5, 1e-5);
  EXPECT_EQ(*static_cast<const int32_t*>(out.find("correct")->data), correct);
  // Changing an ignored position's inputs changes nothing.
  std::vector<float> moved = x;
  for (size_t j = 0; j < 3; ++j) moved[3 + j] += 1.0f;  // position (0, 1): label -1
  Example in2;
  put(in2, "x", {2, 4, 3}, moved);
  put(in2, "label", kI32, {2, 4}, labels);
  Example out2;
  ASSERT_TRUE(h.forward(in2, out2, true).ok());
  EXPECT_FLOAT_EQ(scalar(out2, "loss"), loss);
}

TEST(OnednnSequence, AnEmbeddingRefusesATokenOutsideItsTableNamingIt) {
  const json ir = ir_of({{"input", {{"t", {{"shape", {3}}, {"dtype", "int32"}}}}},
                         {"layers", {{{"type", "embedding"}, {"input_dim", 4}, {"output_dim", 2}}}},
                         {"loss", {{"type", "mse"}}}});
  Harness h;
  ASSERT_TRUE(h.compile(ir, adam_options(1)).ok());
  Example in;
  put(in, "t", kI32, {1, 3}, std::vector<int32_t>{0, 7, 1});
  put(in, "label", {1, 3, 2}, std::vector<float>(6, 0.0f));
  Example out;
  const Status s = h.forward(in, out, true);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message.find("token ID 7 at position 1"), std::string::npos) << s.message;
  EXPECT_NE(s.message.find("embedding"), std::string::npos) << s.message;
}
