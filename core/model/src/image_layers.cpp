// The layers of convolutional image models: conv2d, depthwise_conv2d, max_pool, avg_pool, the global pools,
// batch_norm, flatten; those that reshape images (zero_padding2d, cropping2d, depth_to_space); and those that make
// them larger (U-Nets, autoencoders, super-resolution): conv2d_transpose, upsampling2d and resize. Shapes are per
// example and channels-last ([H, W, C]); kernels are Keras's HWIO (conv2d_transpose's HWOI, as Keras's
// Conv2DTranspose).
#include "layer_site.hpp"

#include <ramjet/sdk/fields.hpp>

#include <algorithm>

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


// Keras Conv2DTranspose. The IR keeps what the convolution it transposes would have padded, [top, bottom, left,
// right]: the output is (in - 1) * stride + kernel - top - bottom, so bottom / right go negative (never below
// -stride) where Keras's output has rows no input reaches (kernel < stride, or output_padding). The kernel is
// Keras's [kh, kw, filters, in_channels].
std::vector<int64_t> output_padding(LayerSite& site, const std::vector<int64_t>& strides) {
  if (!site.has("output_padding") || site.layer()["output_padding"].is_null()) return {};
  const json& v = site.layer()["output_padding"];
  std::vector<int64_t> p;
  if (v.is_number_integer()) p = {v.get<int64_t>(), v.get<int64_t>()};
  else if (v.is_array() && v.size() == 2 && v[0].is_number_integer() && v[1].is_number_integer())
    p = v.get<std::vector<int64_t>>();
  else site.fail_at("output_padding", "must be an integer or [height, width], got " + quote_value(v));
  for (size_t i = 0; i < 2; ++i)
    if (p[i] < 0 || p[i] >= strides[i])
      site.fail_at("output_padding", "must be at least 0 and smaller than the stride (" +
                                         std::to_string(strides[i]) + "), got " + quote_value(v));
  return p;
}

void conv2d_transpose(LayerSite& site) {
  const Shape& in = site.single();
  if (in.size() != 3) site.fail("conv2d_transpose needs an [H, W, C] input, got " + shape_text(in));
  const int64_t filters = site.positive("filters");
  const auto k = site.pair("kernel", 0);
  if (k[0] == 0) site.fail_at("kernel", "required field is missing");
  const auto s = site.pair("strides", 1);
  const std::string padding = site.padding();
  const auto extra = output_padding(site, s);
  Shape out = {0, 0, filters};
  std::vector<int64_t> pad;  // top, bottom, left, right
  for (size_t i = 0; i < 2; ++i) {
    const int64_t same_pad = padding == "same" ? k[i] / 2 : 0;
    out[i] = !extra.empty()        ? (in[i] - 1) * s[i] + k[i] - 2 * same_pad + extra[i]
             : padding == "valid" ? in[i] * s[i] + std::max<int64_t>(k[i] - s[i], 0)
                                  : in[i] * s[i];
    const int64_t full = (in[i] - 1) * s[i] + k[i];
    const int64_t before = padding == "same" ? std::max<int64_t>(full - out[i], 0) / 2 : 0;
    pad.insert(pad.end(), {before, full - before - out[i]});
  }
  if (out[0] > kMaxDimension || out[1] > kMaxDimension || product(out) > kMaxElementsPerExample)
    site.fail("the output " + shape_text(out) + " is too large");
  site.out = out;
  const bool bias = site.flag("use_bias", true);
  site.attrs = {{"filters", filters}, {"kernel", k},      {"strides", s},
                {"padding", pad},     {"use_bias", bias}, {"activation", site.activation()}};
  // Keras's fans for this kernel layout: in = kh * kw * filters, out = kh * kw * in_channels.
  site.kernel_and_bias({k[0], k[1], filters, in[2]}, k[0] * k[1] * filters, k[0] * k[1] * in[2], {filters}, bias);
}

std::string interpolation(LayerSite& site, const char* fallback) {
  if (!site.has("interpolation")) return fallback;
  const json& v = site.layer()["interpolation"];
  if (!v.is_string() || (v != "nearest" && v != "bilinear"))
    site.fail_at("interpolation", "must be \"nearest\" or \"bilinear\", got " + quote_value(v));
  return v.get<std::string>();
}

// upsampling2d (Keras UpSampling2D) and resize (Keras Resizing) are one IR op, "resize", to an output size; bilinear
// samples at half-pixel centres as tf.image.resize does. An upsampling keeps its `size` for tools that map back to
// Keras.
void resize_to(LayerSite& site, int64_t height, int64_t width, const std::string& how) {
  const Shape& in = site.input(0);
  site.out = {height, width, in[2]};
  if (height > kMaxDimension || width > kMaxDimension || product(site.out) > kMaxElementsPerExample)
    site.fail("the output " + shape_text(site.out) + " is too large");
  site.op = "resize";
  site.attrs = {{"height", height}, {"width", width}, {"interpolation", how}};
}

void upsampling2d(LayerSite& site) {
  const Shape& in = site.single();
  if (in.size() != 3) site.fail("upsampling2d needs an [H, W, C] input, got " + shape_text(in));
  const auto size = site.pair("size", 2);
  resize_to(site, in[0] * size[0], in[1] * size[1], interpolation(site, "nearest"));
  site.attrs["size"] = size;
}

void resize(LayerSite& site) {
  const Shape& in = site.single();
  if (in.size() != 3) site.fail("resize needs an [H, W, C] input, got " + shape_text(in));
  resize_to(site, site.positive("height"), site.positive("width"), interpolation(site, "bilinear"));
}

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
  rules["conv2d_transpose"] = {conv2d_transpose, {"filters", "kernel", "strides", "padding", "output_padding", "use_bias",
                                                  "activation", "kernel_initializer", "bias_initializer"}};
  rules["upsampling2d"] = {upsampling2d, {"size", "interpolation"}};
  rules["resize"] = {resize, {"height", "width", "interpolation"}};
  rules["zero_padding2d"] = {zero_padding2d, {"padding"}};
  rules["cropping2d"] = {cropping2d, {"cropping"}};
  rules["depth_to_space"] = {depth_to_space, {"block_size"}};
}

}  // namespace ramjet::core::model_rules
