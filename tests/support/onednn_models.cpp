#include "onednn_models.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace ramjet::test::cpu_backend {

json adam_options(int64_t batch) {
  return {{"batch", batch}, {"precision", "float32"},
          {"optimizer", {{"type", "adam"}, {"beta_1", 0.9}, {"beta_2", 0.999}, {"epsilon", 1e-7}}}};
}

// Every parameter of the graph, uniform in [-scale, scale].
Example random_params(const json& graph, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  Example e;
  for (const auto& [name, spec] : graph["params"].items()) {
    const Shape shape = spec["shape"].get<Shape>();
    put(e, name, shape, uniform(static_cast<size_t>(count_of(shape)), rng, -scale, scale));
  }
  return e;
}

json small_cnn() {
  return Ir()
      .input("x", {8, 8, 1})
      .conv("conv", "x", 1, {6, 6, 4}, {{"filters", 4}, {"kernel", {3, 3}}, {"activation", "relu"}})
      .node("pool", "max_pool", {"conv"}, {3, 3, 4}, {{"pool", {2, 2}}, {"strides", {2, 2}}, {"padding", {0, 0, 0, 0}}})
      .node("flat", "flatten", {"pool"}, {36})
      .dense("fc", "flat", 36, 2)
      .classifier("fc");
}

std::vector<float> train_separable(Harness& h, int steps, int64_t batch, float learning_rate, std::mt19937& rng) {
  std::vector<float> losses;
  for (int step = 1; step <= steps; ++step) {
    Example b = separable_batch(batch, {8, 8, 1}, rng), out;
    const Status f = h.forward(b, out, true, static_cast<uint64_t>(step));
    EXPECT_TRUE(f.ok()) << f.message;
    if (!f.ok()) break;
    losses.push_back(scalar(out, "loss"));
    const Status g = h.backward();
    const Status u = g.ok() ? h.update(step, learning_rate) : g;
    EXPECT_TRUE(u.ok()) << u.message;
    if (!u.ok()) break;
  }
  return losses;
}

void expect_loss_fell(const std::vector<float>& losses) {
  ASSERT_GE(losses.size(), 6u);
  const size_t n = losses.size();
  const double first = (losses[0] + losses[1] + losses[2]) / 3, last = (losses[n - 3] + losses[n - 2] + losses[n - 1]) / 3;
  EXPECT_LT(last, 0.4 * first) << "loss went from " << first << " to " << last;
}

void expect_near_all(const std::vector<float>& got, const std::vector<float>& want, double tol, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::fabs(got[i] - want[i]) > tol * (1.0 + std::fabs(want[i])) && bad++ < 5)
      ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << ", want " << want[i];
}

}  // namespace ramjet::test::cpu_backend
