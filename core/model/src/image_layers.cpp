// The layers of convolutional image models: conv2d, depthwise_conv2d, max_pool, avg_pool, the global pools,
// batch_norm, flatten, zero_padding2d, cropping2d, depth_to_space. Shapes are per example and channels-last ([H, W, C]); kernels are Keras's HWIO.
#include "layer_site.hpp"

namespace ramjet::core::model_rules {

// Output extent and padding (before, after) of one spatial axis, as Keras computes them.
std::pair<int64_t, std::pair<int64_t, int64_t>> spatial(int64_t in, int64_t k, int64_t s, int64_t d,
                                                        const std::string& padding) {
  const int64_t dk = (k - 1) * d + 1;
  if (padding == "valid") return {in >= dk ? (in - dk) / s + 1 : 0, {0, 0}};
  if (padding == "causal") return {in >= 1 ? (in - 1) / s + 1 : 0, {dk - 1, 0}};
  const int64_t out = (in + s - 1) / s;
  const int64_t total = std::max<int64_t>((out - 1) * s + dk - in, 0);
  return {out, {total / 2, total - total / 2}};
}

namespace {

void conv2d(LayerSite& site) {
  const Shape& in = site.single();
  const std::string type = site.type();
  if (in.size() != 3) site.fail(type + " needs an [H, W, C] input, got " + shape_text(in));
  const auto k = site.pair("kernel", 0);
  if (k[0] == 0) site.fail_at("kernel", "required field is missing");
  const auto s = site.pair("strides", 1);
  const auto d = site.pair("dilation", 1);
  const std::string padding = site.padding();
  int64_t groups = 1, filters;
  if (type == "depthwise_conv2d") {
    groups = in[2];
    filters = in[2] * site.positive("depth_multiplier", 1);
  } else {
    filters = site.positive("filters");
    groups = site.positive("groups", 1);
    if (in[2] % groups != 0 || filters % groups != 0)
      site.fail_at("groups", "must divide both the input channels (" + std::to_string(in[2]) + ") and filters (" +
                                 std::to_string(filters) + ")");
  }
  const auto [oh, ph] = spatial(in[0], k[0], s[0], d[0], padding);
  const auto [ow, pw] = spatial(in[1], k[1], s[1], d[1], padding);
  if (oh < 1 || ow < 1)
    site.fail("the " + std::to_string(k[0]) + "x" + std::to_string(k[1]) + " kernel does not fit the input " +
              shape_text(in));
  site.out = {oh, ow, filters};
  site.op = "conv2d";
  const bool bias = site.flag("use_bias", true);
  site.attrs = {{"filters", filters},  {"kernel", k},         {"strides", s},
                {"padding", {ph.first, ph.second, pw.first, pw.second}},    {"dilation", d},
                {"groups", groups},    {"use_bias", bias},    {"activation", site.activation()}};
  site.kernel_and_bias({k[0], k[1], in[2] / groups, filters}, k[0] * k[1] * in[2] / groups,
                       k[0] * k[1] * filters / groups, {filters}, bias);
}

void pool(LayerSite& site) {
  const Shape& in = site.single();
  if (in.size() != 3) site.fail(site.type() + " needs an [H, W, C] input, got " + shape_text(in));
  const auto k = site.pair("pool", 2);
  const auto s = site.has("strides") ? site.pair("strides", 1) : k;
  const std::string padding = site.padding();
  const auto [oh, ph] = spatial(in[0], k[0], s[0], 1, padding);
  const auto [ow, pw] = spatial(in[1], k[1], s[1], 1, padding);
  if (oh < 1 || ow < 1) site.fail("the pool window does not fit the input " + shape_text(in));
  site.out = {oh, ow, in[2]};
  site.attrs = {{"pool", k}, {"strides", s}, {"padding", {ph.first, ph.second, pw.first, pw.second}}};
}

// Over every position of an image [H, W, C] or a sequence [T, C]: one value per channel.
void global_pool(LayerSite& site) {
  const Shape& in = site.single();
  if (in.size() != 3 && in.size() != 2)
    site.fail(site.type() + " needs an [H, W, C] image or a [T, C] sequence, got " + shape_text(in));
  site.out = {in.back()};
}

void batch_norm(LayerSite& site) {
  site.out = site.single();
  const int64_t c = site.out.back();
  site.attrs = {{"momentum", site.number("momentum", 0.99, [](double v) { return v >= 0 && v < 1; }, "in [0, 1)")},
                {"epsilon", site.number("epsilon", 1e-3, [](double v) { return v > 0 && v < 1; }, "in (0, 1)")}};
  for (const char* part : {"gamma", "beta", "moving_mean", "moving_variance"}) {
    const bool one = std::string(part) == "gamma" || std::string(part) == "moving_variance";
    site.param(part, {c}, one ? "ones" : "zeros", 0, 0);
  }
  site.attrs["trainable"] = {"gamma", "beta"};
}

void flatten(LayerSite& site) { site.out = {product(site.single())}; }

const Shape& image_input(LayerSite& site) {
  const Shape& in = site.single();
  if (in.size() != 3) site.fail(site.type() + " needs an [H, W, C] input, got " + shape_text(in));
  return in;
}

// Keras's ZeroPadding2D: zero rows above and below, zero columns left and right (default one of each).
void zero_padding2d(LayerSite& site) {
  const Shape& in = image_input(site);
  const auto p = site.sides("padding", 1);
  site.out = {in[0] + p[0] + p[1], in[1] + p[2] + p[3], in[2]};
  if (site.out[0] > kMaxDimension || site.out[1] > kMaxDimension)
    site.fail_at("padding", "the padded image " + shape_text(site.out) + " is larger than " +
                                std::to_string(kMaxDimension) + " on a side");
  site.attrs = {{"padding", p}};
}

// Keras's Cropping2D: drops rows from the top and bottom, columns from the left and right; at least one of each
// must remain.
void cropping2d(LayerSite& site) {
  const Shape& in = image_input(site);
  const auto c = site.sides("cropping", 0);
  if (c[0] + c[1] >= in[0] || c[2] + c[3] >= in[1])
    site.fail_at("cropping", "removes every row or column of the input " + shape_text(in) + " (top " +
                                 std::to_string(c[0]) + ", bottom " + std::to_string(c[1]) + ", left " +
                                 std::to_string(c[2]) + ", right " + std::to_string(c[3]) + ")");
  site.out = {in[0] - c[0] - c[1], in[1] - c[2] - c[3], in[2]};
  site.attrs = {{"cropping", c}};
}

// tf.nn.depth_to_space (NHWC, DCR): channel (i * b + j) * C' + c of pixel (h, w) moves to pixel (h * b + i,
// w * b + j), channel c, of an image b times larger on each side with C' = C / b² channels.
void depth_to_space(LayerSite& site) {
  const Shape& in = image_input(site);
  if (!site.has("block_size")) site.fail_at("block_size", "required field is missing");
  const int64_t b = site.positive("block_size", 2);
  if (b < 2) site.fail_at("block_size", "must be at least 2");
  if (in[2] % (b * b) != 0)
    site.fail_at("block_size", "the input's " + std::to_string(in[2]) + " channels are not a multiple of " +
                                   std::to_string(b) + "x" + std::to_string(b) + " = " + std::to_string(b * b));
  site.out = {in[0] * b, in[1] * b, in[2] / (b * b)};
  if (site.out[0] > kMaxDimension || site.out[1] > kMaxDimension)
    site.fail_at("block_size", "the output " + shape_text(site.out) + " is larger than " +
                                   std::to_string(kMaxDimension) + " on a side");
  site.attrs = {{"block_size", b}};
}

}  // namespace

void add_image_layers(std::map<std::string, LayerRule>& rules) {
  const std::set<std::string> conv_fields = {"kernel", "strides", "padding", "dilation", "use_bias", "activation",
                                             "kernel_initializer", "bias_initializer"};
  auto with = [](std::set<std::string> base, std::initializer_list<const char*> more) {
    for (const char* m : more) base.insert(m);
    return base;
  };
  rules["conv2d"] = {conv2d, with(conv_fields, {"filters", "groups"})};
  rules["depthwise_conv2d"] = {conv2d, with(conv_fields, {"depth_multiplier"})};
  rules["max_pool"] = {pool, {"pool", "strides", "padding"}};
  rules["avg_pool"] = {pool, {"pool", "strides", "padding"}};
  rules["global_avg_pool"] = {global_pool, {}};
  rules["global_max_pool"] = {global_pool, {}};
  rules["batch_norm"] = {batch_norm, {"momentum", "epsilon"}};
  rules["flatten"] = {flatten, {}};
  rules["zero_padding2d"] = {zero_padding2d, {"padding"}};
  rules["cropping2d"] = {cropping2d, {"cropping"}};
  rules["depth_to_space"] = {depth_to_space, {"block_size"}};
}

}  // namespace ramjet::core::model_rules
