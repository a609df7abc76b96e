#include "gradient_check.hpp"

#include "onednn_models.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace ramjet::test::cpu_backend {

using core::element_count;

void expect_gradients_match(const json& graph, Example inputs, int64_t batch, const GradCheck& c) {
  Harness h(kOneThread, c.backend);
  const Status compiled = h.compile(graph, adam_options(batch));
  ASSERT_TRUE(compiled.ok()) << compiled.message;
  Example params = random_params(graph, 1234, c.param_scale);
  ASSERT_TRUE(h.set_state("parameters", params).ok());
  Example out;
  ASSERT_TRUE(h.forward(inputs, out, true).ok());
  const Status b = h.backward();
  ASSERT_TRUE(b.ok()) << b.message;
  Example grads = h.state("gradients");

  auto loss_with = [&](float* p, float value) -> double {
    const float saved = *p;
    *p = value;
    EXPECT_TRUE(h.set_state("parameters", params).ok());
    *p = saved;
    Example o;
    const Status s = h.forward(inputs, o, true);
    EXPECT_TRUE(s.ok()) << s.message;
    return scalar(o, "loss");
  };
  auto central = [&](float* p, double step) {
    return (loss_with(p, *p + static_cast<float>(step)) - loss_with(p, *p - static_cast<float>(step))) / (2 * step);
  };
  std::mt19937 rng(99);
  for (auto& entry : params.entries) {
    const std::string& name = entry.name;
    if (name.find("/moving_") != std::string::npos) continue;  // batch_norm statistics: no gradient
    if (grads.find(name) == nullptr) {
      ADD_FAILURE() << name << ": no gradient";
      continue;
    }
    const bool invariant = std::any_of(c.invariant.begin(), c.invariant.end(), [&](const std::string& end) {
      return name.size() >= end.size() && name.compare(name.size() - end.size(), end.size(), end) == 0;
    });
    if (invariant) {
      for (float v : values(grads, name)) EXPECT_LT(std::fabs(v), 1e-5) << name << ": the loss does not depend on it";
      continue;
    }
    float* p = static_cast<float*>(entry.tensor->dl_tensor.data);
    const size_t n = static_cast<size_t>(element_count(entry.tensor->dl_tensor));
    std::vector<size_t> idx(n);
    for (size_t i = 0; i < n; ++i) idx[i] = i;
    std::shuffle(idx.begin(), idx.end(), rng);
    idx.resize(std::min(n, c.samples));
    const std::vector<float> g = values(grads, name);
    double diff2 = 0, g2 = 0, fd2 = 0;
    size_t kinks = 0;
    for (size_t i : idx) {
      const double wide = central(p + i, c.eps), fd = central(p + i, c.eps / 2);
      if (std::fabs(wide - fd) > 1e-2 * std::max(std::fabs(wide), std::fabs(fd)) + 1e-4) {
        ++kinks;
        continue;
      }
      diff2 += (fd - g[i]) * (fd - g[i]);
      g2 += static_cast<double>(g[i]) * g[i];
      fd2 += fd * fd;
    }
    EXPECT_TRUE(h.set_state("parameters", params).ok());
    EXPECT_LE(kinks, idx.size() / 2) << name << ": too many steps across kinks";
    const double scale = std::sqrt(std::max(g2, fd2));
    EXPECT_GT(scale, 1e-4) << name << ": the loss does not depend on it, so the check would prove nothing";
    EXPECT_LT(std::sqrt(diff2) / scale, c.tolerance)
        << name << ": |backward - finite differences| / |gradient| over " << idx.size() - kinks << " entries";
  }
}

}  // namespace ramjet::test::cpu_backend
