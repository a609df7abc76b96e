#include "optimizer.hpp"

#include <cmath>

namespace onednn {
namespace {
constexpr int64_t kParallelMin = 1 << 14;
}

Optimizer::Optimizer(const OptimizerSpec& spec, ParameterStore& params) : spec_(spec) {
  std::vector<const char*> names;
  if (spec.type == OptimizerSpec::Type::sgd && spec.momentum > 0) names = {"momentum"};
  if (spec.type != OptimizerSpec::Type::sgd) names = {"m", "v"};
  for (const auto& p : params.all())
    if (p->trainable)
      for (const char* n : names) slots_.push_back({p->name + "/" + n, p.get(), std::vector<float>(p->count(), 0.0f)});
  size_t next = 0;  // slots_ is complete: pointers into it stay valid
  for (const auto& p : params.all()) {
    if (!p->trainable) continue;
    Entry e{p.get(), nullptr, nullptr};
    if (names.size() >= 1) e.first = slots_[next++].data.data();
    if (names.size() >= 2) e.second = slots_[next++].data.data();
    entries_.push_back(e);
  }
}

Optimizer::Slot* Optimizer::find(const std::string& name) {
  for (Slot& s : slots_)
    if (s.name == name) return &s;
  return nullptr;
}

void Optimizer::update(const ramjet_update_args& args) {
  if (args.step < 1) fail(RAMJET_ERR_INVALID_ARGUMENT, "optimizer_update: step must be >= 1 (it is 1-based)");
  if (!std::isfinite(args.learning_rate) || !std::isfinite(args.gradient_scale))
    fail(RAMJET_ERR_INVALID_ARGUMENT, "optimizer_update: learning_rate and gradient_scale must be finite");
  const float lr = args.learning_rate, gs = args.gradient_scale, wd = static_cast<float>(spec_.weight_decay);
  for (const Entry& e : entries_) {
    Param& p = *e.param;
    float* w = p.data();
    const float* grad = p.grad_data();
    const int64_t n = static_cast<int64_t>(p.count());
    switch (spec_.type) {
      case OptimizerSpec::Type::sgd: {
        const float mu = static_cast<float>(spec_.momentum);
        if (e.first == nullptr) {
#pragma omp parallel for simd if (n >= kParallelMin)
          for (int64_t i = 0; i < n; ++i) w[i] -= lr * (grad[i] * gs + wd * w[i]);
          break;
        }
        float* v = e.first;
        const bool nesterov = spec_.nesterov;
#pragma omp parallel for simd if (n >= kParallelMin)
        for (int64_t i = 0; i < n; ++i) {
          const float g = grad[i] * gs + wd * w[i];
          v[i] = mu * v[i] - lr * g;
          w[i] += nesterov ? mu * v[i] - lr * g : v[i];
        }
        break;
      }
      case OptimizerSpec::Type::adam:
      case OptimizerSpec::Type::adamw: {
        const double t = static_cast<double>(args.step);
        const float b1 = static_cast<float>(spec_.beta_1), b2 = static_cast<float>(spec_.beta_2);
        const float eps = static_cast<float>(spec_.epsilon);
        const float alpha = static_cast<float>(lr * std::sqrt(1.0 - std::pow(spec_.beta_2, t)) /
                                               (1.0 - std::pow(spec_.beta_1, t)));
        const bool decoupled = spec_.type == OptimizerSpec::Type::adamw;
        const float l2 = decoupled ? 0.0f : wd, decay = decoupled ? lr * wd : 0.0f;
        float* m = e.first;
        float* v = e.second;
#pragma omp parallel for simd if (n >= kParallelMin)
        for (int64_t i = 0; i < n; ++i) {
          w[i] -= decay * w[i];
          const float g = grad[i] * gs + l2 * w[i];
          m[i] = b1 * m[i] + (1.0f - b1) * g;
          v[i] = b2 * v[i] + (1.0f - b2) * g * g;
          w[i] -= alpha * m[i] / (std::sqrt(v[i]) + eps);
        }
        break;
      }
    }
    ++p.version;
  }
}

}  // namespace onednn
