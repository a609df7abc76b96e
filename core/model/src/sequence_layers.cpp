// The layers of sequence models, with Keras's semantics and parameter layouts so that weights move between ramjet
// and Keras: embedding (int32 token IDs), position_embedding (learned positions, added), layer_norm, rms_norm,
// multi_head_attention (Keras's MultiHeadAttention), matmul between two layer outputs, conv1d. Shapes are per
// example: a sequence is [T, D].
#include "layer_site.hpp"

namespace ramjet::core::model_rules {
namespace {

bool positive_number(double v) { return v > 0 && v < 1; }
bool probability(double v) { return v >= 0 && v < 1; }

const Shape& one_sequence(LayerSite& site) {
  const Shape& in = site.single();
  if (in.size() != 2) site.fail(site.type() + " needs a sequence [T, D], got " + shape_text(in));
  return in;
}

// Token IDs [...] → vectors [..., output_dim]; the table is Keras's "embeddings" [input_dim, output_dim].
void embedding(LayerSite& site) {
  if (site.input_count() != 1) site.fail_at("inputs", "embedding takes exactly one input");
  if (site.input_dtype(0) != "int32")
    site.fail("embedding reads int32 token IDs, but '" + site.input_name(0) + "' is " + site.input_dtype(0));
  const int64_t vocabulary = site.positive("input_dim"), width = site.positive("output_dim");
  site.out = site.input(0);
  site.out.push_back(width);
  site.attrs = {{"input_dim", vocabulary}, {"output_dim", width}};
  // Keras draws embeddings uniformly from [-0.05, 0.05].
  site.param("embeddings", {vocabulary, width}, site.initializer("embeddings_initializer", "uniform"), vocabulary,
             width);
}

// Adds a learned vector per position to a sequence [T, D] (T at most sequence_length): Keras Hub's
// PositionEmbedding followed by an add, in one layer. The table is "embeddings" [sequence_length, D].
void position_embedding(LayerSite& site) {
  const Shape& in = one_sequence(site);
  const int64_t length = site.positive("sequence_length");
  if (in[0] > length)
    site.fail_at("sequence_length", "must be at least the input's length " + std::to_string(in[0]) + ", got " +
                                        std::to_string(length));
  site.out = in;
  site.attrs = {{"sequence_length", length}};
  site.param("embeddings", {length, in[1]}, site.initializer("embeddings_initializer", "glorot_uniform"), length,
             in[1]);
}

// Normalizes over the last axis: layer_norm (Keras LayerNormalization: gamma, beta, epsilon 1e-3) and rms_norm
// (Keras RMSNormalization: scale, epsilon 1e-6).
void normalization(LayerSite& site) {
  site.out = site.single();
  const int64_t width = site.out.back();
  const bool rms = site.type() == "rms_norm";
  site.attrs = {{"epsilon", site.number("epsilon", rms ? 1e-6 : 1e-3, positive_number, "in (0, 1)")}};
  if (rms) {
    site.param("scale", {width}, "ones", 0, 0);
    return;
  }
  const bool scale = site.flag("scale", true), center = site.flag("center", true);
  if (scale) site.param("gamma", {width}, "ones", 0, 0);
  if (center) site.param("beta", {width}, "zeros", 0, 0);
}

// Keras's MultiHeadAttention on sequences: inputs [query] (self-attention), [query, value] or [query, value, key].
// Kernels are EinsumDense kernels: query/key [D, heads, key_dim], value [D, heads, value_dim], attention_output
// [heads, value_dim, output]; Keras's glorot fans for them count the leading axes as the receptive field.
void multi_head_attention(LayerSite& site) {
  if (site.input_count() < 1 || site.input_count() > 3)
    site.fail_at("inputs", "multi_head_attention takes [query], [query, value] or [query, value, key]");
  site.require_float_inputs();
  const Shape& query = site.input(0);
  const Shape& value = site.input(site.input_count() > 1 ? 1 : 0);
  const Shape& key = site.input(site.input_count() > 2 ? 2 : site.input_count() > 1 ? 1 : 0);
  for (const Shape* s : {&query, &value, &key})
    if (s->size() != 2) site.fail_at("inputs", "multi_head_attention needs sequences [T, D], got " + shape_text(*s));
  if (key[0] != value[0])
    site.fail_at("inputs", "key and value must have the same length, got " + shape_text(key) + " and " +
                               shape_text(value));
  const int64_t heads = site.positive("num_heads"), key_dim = site.positive("key_dim");
  const int64_t value_dim = site.positive("value_dim", key_dim);
  const int64_t output = site.positive("output_shape", query[1]);
  const bool causal = site.flag("use_causal_mask", false), bias = site.flag("use_bias", true);
  if (causal && query[0] != value[0])
    site.fail_at("use_causal_mask", "a causal mask needs query and value of one length, got " +
                                        std::to_string(query[0]) + " and " + std::to_string(value[0]));
  site.out = {query[0], output};
  site.attrs = {{"num_heads", heads},
                {"key_dim", key_dim},
                {"value_dim", value_dim},
                {"output_shape", output},
                {"use_bias", bias},
                {"use_causal_mask", causal},
                {"dropout", site.number("dropout", 0.0, probability, "in [0, 1)")}};
  const std::string init = site.initializer("kernel_initializer", "glorot_uniform");
  const std::string bias_init = site.initializer("bias_initializer", "zeros");
  auto projection = [&](const std::string& role, int64_t in, int64_t per_head) {
    site.param(role + "/kernel", {in, heads, per_head}, init, heads * in, per_head * in);
    if (bias) site.param(role + "/bias", {heads, per_head}, bias_init, 0, 0);
  };
  projection("query", query[1], key_dim);
  projection("key", key[1], key_dim);
  projection("value", value[1], value_dim);
  site.param("attention_output/kernel", {heads, value_dim, output}, init, value_dim * heads, output * heads);
  if (bias) site.param("attention_output/bias", {output}, bias_init, 0, 0);
}

// a [..., M, K] times b [..., K, N] (either transposed first), the leading axes equal.
void matmul(LayerSite& site) {
  if (site.input_count() != 2) site.fail_at("inputs", "matmul needs exactly two inputs [a, b]");
  site.require_float_inputs();
  const bool ta = site.flag("transpose_a", false), tb = site.flag("transpose_b", false);
  Shape a = site.input(0), b = site.input(1);
  if (a.size() < 2 || a.size() != b.size() || !std::equal(a.begin(), a.end() - 2, b.begin()))
    site.fail_at("inputs", "matmul needs two inputs of rank 2 or more with equal leading axes, got " +
                               shape_text(a) + " and " + shape_text(b));
  const size_t r = a.size();
  if (ta) std::swap(a[r - 2], a[r - 1]);
  if (tb) std::swap(b[r - 2], b[r - 1]);
  if (a[r - 1] != b[r - 2])
    site.fail_at("inputs", "matmul's inner dimensions differ: " + shape_text(a) + " times " + shape_text(b) +
                               " (after transpose_a / transpose_b)");
  site.out = a;
  site.out[r - 1] = b[r - 1];
  site.attrs = {{"transpose_a", ta}, {"transpose_b", tb}};
}

// Keras's Conv1D on [T, C]: kernel [k, C / groups, filters], padding valid, same or causal.
void conv1d(LayerSite& site) {
  const Shape& in = one_sequence(site);
  const int64_t filters = site.positive("filters"), k = site.positive("kernel");
  const int64_t stride = site.positive("strides", 1), dilation = site.positive("dilation", 1);
  const int64_t groups = site.positive("groups", 1);
  if (in[1] % groups != 0 || filters % groups != 0)
    site.fail_at("groups", "must divide both the input channels (" + std::to_string(in[1]) + ") and filters (" +
                               std::to_string(filters) + ")");
  const std::string padding = site.padding(true);
  const auto [length, pad] = spatial(in[0], k, stride, dilation, padding);
  if (length < 1) site.fail("the kernel of " + std::to_string(k) + " does not fit the input " + shape_text(in));
  const bool bias = site.flag("use_bias", true);
  site.out = {length, filters};
  site.attrs = {{"filters", filters}, {"kernel", k},      {"strides", stride},  {"padding", {pad.first, pad.second}},
                {"dilation", dilation}, {"groups", groups}, {"use_bias", bias}, {"activation", site.activation()}};
  site.kernel_and_bias({k, in[1] / groups, filters}, k * in[1] / groups, k * filters / groups, {filters}, bias);
}

}  // namespace

void add_sequence_layers(std::map<std::string, LayerRule>& rules) {
  rules["embedding"] = {embedding, {"input_dim", "output_dim", "embeddings_initializer"}};
  rules["position_embedding"] = {position_embedding, {"sequence_length", "embeddings_initializer"}};
  rules["layer_norm"] = {normalization, {"epsilon", "scale", "center"}};
  rules["rms_norm"] = {normalization, {"epsilon"}};
  rules["multi_head_attention"] = {multi_head_attention,
                                   {"num_heads", "key_dim", "value_dim", "output_shape", "use_bias", "use_causal_mask",
                                    "dropout", "kernel_initializer", "bias_initializer"}};
  rules["matmul"] = {matmul, {"transpose_a", "transpose_b"}};
  rules["conv1d"] = {conv1d, {"filters", "kernel", "strides", "dilation", "groups", "padding", "use_bias", "activation",
                              "kernel_initializer", "bias_initializer"}};
}

}  // namespace ramjet::core::model_rules
