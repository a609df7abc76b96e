// The cpu backend's shape layers of image-to-image models: zero_padding2d, cropping2d, depth_to_space and concat on
// any axis. Forward against index arithmetic written out by hand (exact: they only move values), read straight
// from a graph input and from a conv's output (a blocked layout inside oneDNN); backward against finite
// differences, including a value read twice (its gradient's two parts add up).
#include "ramjet/plugin/example.hpp"
#include "gradient_check.hpp"
#include "onednn_harness.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

using namespace ramjet::core;
using namespace ramjet::test::cpu_backend;

namespace {

constexpr int64_t N = 2, H = 4, W = 6, C = 16;

// NHWC index of a batch of [h, w, c] images.
int64_t at(int64_t n, int64_t y, int64_t x, int64_t c, int64_t h, int64_t w, int64_t ch) {
  return ((n * h + y) * w + x) * ch + c;
}

struct ShapeOutputs {
  std::vector<float> x, y, pad, crop, d2s, rows, cols, channels;
};

// x [4, 6, 16] (through an identity 1x1 conv when `via_conv`) and y [4, 6, 16] into every layer under test.
ShapeOutputs run_shape_layers(bool via_conv) {
  Ir ir;
  ir.input("x", {H, W, C}).input("y", {H, W, C});
  std::string src = "x";
  if (via_conv) {
    ir.conv("id", "x", C, {H, W, C}, {{"filters", C}, {"kernel", {1, 1}}});
    src = "id";
  }
  ir.node("pad", "zero_padding2d", {src}, {H + 3, W + 3, C}, {{"padding", {1, 2, 0, 3}}})
      .node("crop", "cropping2d", {src}, {H - 1, W - 3, C}, {{"cropping", {1, 0, 2, 1}}})
      .node("d2s", "depth_to_space", {src}, {2 * H, 2 * W, C / 4}, {{"block_size", 2}})
      .node("rows", "concat", {src, "y"}, {2 * H, W, C}, {{"axis", -3}})
      .node("cols", "concat", {"y", src}, {H, 2 * W, C}, {{"axis", -2}})
      .node("channels", "concat", {src, "y"}, {H, W, 2 * C}, {{"axis", -1}});
  json g = ir.inference("pad");
  g["outputs"] = {"pad", "crop", "d2s", "rows", "cols", "channels"};
  Harness h;
  Status s = h.compile(g, {{"batch", N}});
  EXPECT_TRUE(s.ok()) << s.message;
  ShapeOutputs r;
  std::mt19937 rng(5);
  r.x = uniform(N * H * W * C, rng);
  r.y = uniform(N * H * W * C, rng);
  if (via_conv) {
    std::vector<float> identity(C * C, 0.0f);
    for (int64_t c = 0; c < C; ++c) identity[c * C + c] = 1.0f;
    Example params;
    put(params, "id/kernel", {1, 1, C, C}, identity);
    put(params, "id/bias", {C}, std::vector<float>(C, 0.0f));
    EXPECT_TRUE(h.set_state("parameters", params).ok());
  }
  Example in, out;
  put(in, "x", {N, H, W, C}, r.x);
  put(in, "y", {N, H, W, C}, r.y);
  s = h.forward(in, out, false);
  EXPECT_TRUE(s.ok()) << s.message;
  for (auto [name, field] : {std::pair{"pad", &ShapeOutputs::pad}, {"crop", &ShapeOutputs::crop},
                             {"d2s", &ShapeOutputs::d2s}, {"rows", &ShapeOutputs::rows}, {"cols", &ShapeOutputs::cols},
                             {"channels", &ShapeOutputs::channels}})
    r.*field = values(out, name);
  return r;
}

class OnednnImageShapeForward : public ::testing::TestWithParam<bool> {};

TEST_P(OnednnImageShapeForward, MatchesIndexArithmetic) {
  const ShapeOutputs r = run_shape_layers(GetParam());
  const auto& x = r.x;
  const auto& y = r.y;
  std::vector<float> pad(N * (H + 3) * (W + 3) * C, 0.0f), crop(N * (H - 1) * (W - 3) * C), d2s(N * H * W * C),
      rows(2 * x.size()), cols(2 * x.size()), channels(2 * x.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < H; ++i)
      for (int64_t j = 0; j < W; ++j)
        for (int64_t c = 0; c < C; ++c) {
          const float v = x[at(n, i, j, c, H, W, C)], u = y[at(n, i, j, c, H, W, C)];
          pad[at(n, i + 1, j, c, H + 3, W + 3, C)] = v;  // top 1, left 0
          if (i >= 1 && j >= 2 && j < W - 1) crop[at(n, i - 1, j - 2, c, H - 1, W - 3, C)] = v;
          // tf.nn.depth_to_space, DCR: channel (bi * 2 + bj) * C' + c' -> pixel (2i + bi, 2j + bj), channel c'.
          const int64_t block = c / (C / 4), bi = block / 2, bj = block % 2, co = c % (C / 4);
          d2s[at(n, 2 * i + bi, 2 * j + bj, co, 2 * H, 2 * W, C / 4)] = v;
          rows[at(n, i, j, c, 2 * H, W, C)] = v;
          rows[at(n, H + i, j, c, 2 * H, W, C)] = u;
          cols[at(n, i, j, c, H, 2 * W, C)] = u;
          cols[at(n, i, W + j, c, H, 2 * W, C)] = v;
          channels[at(n, i, j, c, H, W, 2 * C)] = v;
          channels[at(n, i, j, C + c, H, W, 2 * C)] = u;
        }
  EXPECT_EQ(r.pad, pad);
  EXPECT_EQ(r.crop, crop);
  EXPECT_EQ(r.d2s, d2s);
  EXPECT_EQ(r.rows, rows);
  EXPECT_EQ(r.cols, cols);
  EXPECT_EQ(r.channels, channels);
}

INSTANTIATE_TEST_SUITE_P(FromAnInputAndFromAConv, OnednnImageShapeForward, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "via_conv" : "from_input"; });

json same_conv(int64_t filters, const char* activation = "linear") {
  return {{"filters", filters}, {"kernel", {3, 3}}, {"padding", {1, 1, 1, 1}}, {"activation", activation}};
}

}  // namespace

TEST(OnednnImageShapeGradients, PadThenCropWithTheInputReadTwice) {
  // c1 is read by the pad and by the add: its gradient is the sum of the shifted crop's part and the add's.
  json g = Ir()
               .input("x", {6, 6, 2})
               .conv("c1", "x", 2, {6, 6, 3}, same_conv(3, "tanh"))
               .node("pad", "zero_padding2d", {"c1"}, {9, 7, 3}, {{"padding", {1, 2, 0, 1}}})
               .node("crop", "cropping2d", {"pad"}, {6, 6, 3}, {{"cropping", {2, 1, 1, 0}}})
               .node("sum", "add", {"crop", "c1"}, {6, 6, 3})
               .conv("c2", "sum", 3, {6, 6, 2}, same_conv(2, "tanh"))
               .node("flat", "flatten", {"c2"}, {72})
               .dense("fc", "flat", 72, 3)
               .classifier("fc");
  expect_gradients_match(g, batch_of({6, 6, 2}, 3, 3, 21), 3);
}

TEST(OnednnImageShapeGradients, DepthToSpace) {
  json g = Ir()
               .input("x", {3, 3, 2})
               .conv("c1", "x", 2, {3, 3, 8}, same_conv(8, "tanh"))
               .node("d2s", "depth_to_space", {"c1"}, {6, 6, 2}, {{"block_size", 2}})
               .conv("c2", "d2s", 2, {6, 6, 3}, same_conv(3, "tanh"))
               .node("flat", "flatten", {"c2"}, {108})
               .dense("fc", "flat", 108, 3)
               .classifier("fc");
  expect_gradients_match(g, batch_of({3, 3, 2}, 3, 3, 22), 3);
}

TEST(OnednnImageShapeGradients, ConcatOnRowsColumnsAndTheFirstAxisOfASequence) {
  json images = Ir()
                    .input("x", {4, 5, 2})
                    .conv("c1", "x", 2, {4, 5, 3}, same_conv(3, "tanh"))
                    .conv("c2", "c1", 3, {4, 5, 3}, same_conv(3, "tanh"))
                    .node("rows", "concat", {"c1", "c2"}, {8, 5, 3}, {{"axis", -3}})
                    .node("cols", "concat", {"c2", "c1"}, {4, 10, 3}, {{"axis", -2}})
                    .node("fr", "flatten", {"rows"}, {120})
                    .node("fc_", "flatten", {"cols"}, {120})
                    .node("both", "concat", {"fr", "fc_"}, {240}, {{"axis", -1}})
                    .dense("fc", "both", 240, 3)
                    .classifier("fc");
  expect_gradients_match(images, batch_of({4, 5, 2}, 3, 3, 23), 3);

  Ir seq;
  seq.input("x", {4, 3}).dense("a", "x", 3, 5, "tanh").dense("b", "a", 5, 5, "tanh");
  for (auto& n : seq.j["nodes"]) n["shape"] = {4, 5};  // dense on every row of the [T, C] sequence
  seq.node("steps", "concat", {"a", "b"}, {8, 5}, {{"axis", 0}})  // 0-based in the IR: the first axis
      .node("flat", "flatten", {"steps"}, {40})
      .dense("fc", "flat", 40, 3);
  const json sequence = seq.classifier("fc");
  expect_gradients_match(sequence, batch_of({4, 3}, 4, 3, 24), 4);
}

TEST(OnednnImageShapeErrors, WrongRanksAndAxesAreRefusedNamingTheNode) {
  auto compile = [](const json& g) {
    Harness h;
    return h.compile(g, {{"batch", 2}});
  };
  Status s = compile(Ir().input("x", {4, 6}).node("p", "zero_padding2d", {"x"}, {6, 8}, {{"padding", {1, 1, 1, 1}}})
                         .inference("p"));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message.find("'p'"), std::string::npos) << s.message;
  EXPECT_NE(s.message.find("needs an [H, W, C] image"), std::string::npos) << s.message;
  s = compile(Ir().input("x", {4, 6, 8}).node("d", "depth_to_space", {"x"}, {12, 18, 1}, {{"block_size", 3}})
                  .inference("d"));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message.find("block_size"), std::string::npos) << s.message;
  s = compile(Ir().input("x", {4, 6, 8}).input("y", {4, 6, 8})
                  .node("cat", "concat", {"x", "y"}, {4, 6, 16}, {{"axis", 3}})
                  .inference("cat"));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message.find("names no axis"), std::string::npos) << s.message;
  s = compile(Ir().input("x", {4, 6, 8}).input("y", {3, 6, 8})
                  .node("cat", "concat", {"x", "y"}, {4, 6, 16}, {{"axis", -1}})
                  .inference("cat"));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message.find("differ on an axis other than the joined one"), std::string::npos) << s.message;
}
