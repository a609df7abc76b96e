// Seeded parameter initialisation, as Keras draws it (so a ramjet model starts where a Keras model of the same
// architecture would, statistically).
#include "ramjet/plugin/failure.hpp"
#include "ramjet/model/graph.hpp"
#include "ramjet/plugin/seeds.hpp"

#include <cmath>
#include <numbers>

namespace ramjet::core {
namespace {

// Keras's truncated normal: draws outside two standard deviations are redrawn; the stddev is divided by this
// constant so the truncated distribution keeps the intended variance.
constexpr double kTruncatedNormalStd = 0.87962566103423978;

class Generator {
 public:
  explicit Generator(uint64_t seed) : state_(seed) {}
  double uniform() { return static_cast<double>(mix64(state_++) >> 11) * 0x1.0p-53; }  // [0, 1)
  double normal() {  // Box-Muller
    const double u1 = 1.0 - uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }
  double truncated_normal(double stddev) {
    for (;;) {
      const double x = normal();
      if (std::fabs(x) <= 2.0) return x * stddev;
    }
  }

 private:
  uint64_t state_;
};

uint64_t name_hash(const std::string& name) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : name) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

}  // namespace

Example initial_parameters(const nlohmann::json& ir, uint64_t seed) {
  Example params;
  for (const auto& [name, spec] : ir.at("params").items()) {
    const auto shape = spec.at("shape").get<std::vector<int64_t>>();
    TensorPtr t = make_tensor({kDLFloat, 32, 1}, shape);
    float* v = static_cast<float*>(t->dl_tensor.data);
    const int64_t n = element_count(t->dl_tensor);
    const std::string init = spec.value("init", std::string("zeros"));
    const double fan_in = std::max<double>(1, spec.value("fan_in", 1));
    const double fan_out = std::max<double>(1, spec.value("fan_out", 1));
    Generator g(mix64(seed ^ name_hash(name)));
    auto fill_uniform = [&](double limit) {
      for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>((2.0 * g.uniform() - 1.0) * limit);
    };
    auto fill_truncated = [&](double stddev) {
      for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(g.truncated_normal(stddev / kTruncatedNormalStd));
    };
    if (init == "zeros") {
    } else if (init == "ones") {
      std::fill(v, v + n, 1.0f);
    } else if (init == "uniform") {  // Keras's "uniform": RandomUniform(-0.05, 0.05), the embeddings' default
      fill_uniform(0.05);
    } else if (init == "glorot_uniform") {
      fill_uniform(std::sqrt(6.0 / (fan_in + fan_out)));
    } else if (init == "glorot_normal") {
      fill_truncated(std::sqrt(2.0 / (fan_in + fan_out)));
    } else if (init == "he_uniform") {
      fill_uniform(std::sqrt(6.0 / fan_in));
    } else if (init == "he_normal") {
      fill_truncated(std::sqrt(2.0 / fan_in));
    } else if (init == "lecun_normal") {
      fill_truncated(std::sqrt(1.0 / fan_in));
    } else {
      throw InvalidInput("parameter '" + name + "': unknown initializer '" + init + "'");
    }
    params.set(name, std::move(t));
  }
  return params;
}

}  // namespace ramjet::core
