#include "optimizer.hpp"

#include "isa.hpp"
#include "loop_share.hpp"

#include <cmath>
#include <immintrin.h>

namespace onednn {
namespace {
constexpr int64_t kParallelMin = 1 << 14;

// Subnormal numbers flushed to zero, as inputs and results, on the calling thread while it lives. The second
// moments of Adam and RMSprop (v = beta_2 v + (1 - beta_2) g^2) reach subnormal values in weights the loss barely
// moves, and each square root and division of one took a microcode assist: Adam's update was 5 % of the CNN's bf16
// step on the AMX Xeon, and the step ran 11 % faster with them flushed (the same loss after two epochs, to the
// bit). TensorFlow runs its CPU kernels with subnormals flushed too.
class FlushSubnormals {
 public:
  FlushSubnormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | kFlushToZero | kDenormalsAreZero); }
  ~FlushSubnormals() { _mm_setcsr(saved_); }
  FlushSubnormals(const FlushSubnormals&) = delete;
  FlushSubnormals& operator=(const FlushSubnormals&) = delete;

 private:
  static constexpr unsigned kFlushToZero = 0x8000, kDenormalsAreZero = 0x0040;  // MXCSR's FTZ and DAZ bits
  unsigned saved_;
};

// body(i) for i in [0, n), on the plan's threads for large n, in vectors, with subnormals flushed.
template <class Body>
void each_element(int64_t n, Body body) {
  const LoopTicket ticket;
#pragma omp parallel if (n >= kParallelMin)
  {
    FlushSubnormals flush;
    const LoopShare share(ticket);
#pragma omp for simd nowait
    for (int64_t i = 0; i < n; ++i) body(i);
  }
}

// The slot names of each optimizer, in the order Entry::slot keeps them.
std::vector<const char*> slot_names(const OptimizerSpec& spec) {
  switch (spec.type) {
    case OptimizerSpec::Type::sgd:
      if (spec.momentum > 0) return {"momentum"};
      return {};
    case OptimizerSpec::Type::adam:
    case OptimizerSpec::Type::adamw:
      return {"m", "v"};
    case OptimizerSpec::Type::rmsprop: {
      std::vector<const char*> names{"velocity"};
      if (spec.momentum > 0) names.push_back("momentum");
      if (spec.centered) names.push_back("average_gradient");
      return names;
    }
  }
  return {};
}

// RMSprop's numbers for one step. 1 - rho is taken in double, as Keras does.
struct RmspropStep {
  float lr, gs, l2, rho, one_minus_rho, mu, eps;
};

// One parameter's RMSprop step, Keras's operations in Keras's order (keras/src/optimizers/rmsprop.py). `mom` is
// read only with Momentum, `avg` only when Centered.
template <bool Momentum, bool Centered>
void rmsprop_step(const RmspropStep& k, float* w, const float* grad, int64_t n, float* ms, float* mom, float* avg) {
  const float lr = k.lr, gs = k.gs, l2 = k.l2, rho = k.rho, one_minus_rho = k.one_minus_rho, mu = k.mu, eps = k.eps;
  each_element(n, [=](int64_t i) {
    const float g = grad[i] * gs + l2 * w[i];
    ms[i] = rho * ms[i] + one_minus_rho * (g * g);
    float denominator;
    if constexpr (Centered) {
      avg[i] = rho * avg[i] + one_minus_rho * g;
      denominator = ms[i] - avg[i] * avg[i] + eps;
    } else {
      denominator = ms[i] + eps;
    }
    const float increment = lr * g / std::sqrt(denominator);
    if constexpr (Momentum) {
      mom[i] = mu * mom[i] + increment;
      w[i] -= mom[i];
    } else {
      w[i] -= increment;
    }
  });
}
// Adam's (and AdamW's) numbers for one step.
struct AdamStep {
  float decay, gs, l2, b1, c1, b2, c2, alpha, eps;
};

// One element's Adam step, Keras's operations in Keras's order.
[[gnu::always_inline]] inline void adam_element(const AdamStep& k, float* w, const float* grad, float* m, float* v,
                                                int64_t i) {
  w[i] -= k.decay * w[i];
  const float g = grad[i] * k.gs + k.l2 * w[i];
  m[i] = k.b1 * m[i] + k.c1 * g;
  v[i] = k.b2 * v[i] + k.c2 * g * g;
  w[i] -= k.alpha * m[i] / (std::sqrt(v[i]) + k.eps);
}

void adam_step(const AdamStep k, float* w, const float* grad, float* m, float* v, int64_t n) {
  each_element(n, [=](int64_t i) { adam_element(k, w, grad, m, v, i); });
}

// The same in AVX-512's 16-float vectors (each_element's loop written out: a lambda would be built for the
// baseline).
#pragma GCC push_options
#pragma GCC target("avx512f")
void adam_step_avx512(const AdamStep k, float* w, const float* grad, float* m, float* v, int64_t n) {
  const LoopTicket ticket;
#pragma omp parallel if (n >= kParallelMin)
  {
    FlushSubnormals flush;
    const LoopShare share(ticket);
#pragma omp for simd nowait
    for (int64_t i = 0; i < n; ++i) adam_element(k, w, grad, m, v, i);
  }
}
#pragma GCC pop_options
}  // namespace

Optimizer::Optimizer(const OptimizerSpec& spec, ParameterStore& params) : spec_(spec) {
  const std::vector<const char*> names = slot_names(spec);
  for (const auto& p : params.all())
    if (p->trainable)
      for (const char* n : names) slots_.push_back({p->name + "/" + n, p.get(), std::vector<float>(p->count(), 0.0f)});
  size_t next = 0;  // slots_ is complete: pointers into it stay valid
  for (const auto& p : params.all()) {
    if (!p->trainable) continue;
    Entry e{p.get(), {nullptr, nullptr, nullptr}, spec.decay_all || p->shape.size() >= 2};
    for (size_t k = 0; k < names.size(); ++k) e.slot[k] = slots_[next++].data.data();
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
        if (e.slot[0] == nullptr) {
          each_element(n, [=](int64_t i) { w[i] -= lr * (grad[i] * gs + wd * w[i]); });
          break;
        }
        float* v = e.slot[0];
        const bool nesterov = spec_.nesterov;
        each_element(n, [=](int64_t i) {
          const float g = grad[i] * gs + wd * w[i];
          v[i] = mu * v[i] - lr * g;
          w[i] += nesterov ? mu * v[i] - lr * g : v[i];
        });
        break;
      }
      case OptimizerSpec::Type::adam:
      case OptimizerSpec::Type::adamw: {
        const double t = static_cast<double>(args.step);
        const float b1 = static_cast<float>(spec_.beta_1), b2 = static_cast<float>(spec_.beta_2);
        // 1 - beta in double, as Keras does (1.0f - 0.999f is off by 1e-5 relative).
        const float c1 = static_cast<float>(1.0 - spec_.beta_1), c2 = static_cast<float>(1.0 - spec_.beta_2);
        const float eps = static_cast<float>(spec_.epsilon);
        const float alpha = static_cast<float>(lr * std::sqrt(1.0 - std::pow(spec_.beta_2, t)) /
                                               (1.0 - std::pow(spec_.beta_1, t)));
        const bool decoupled = spec_.type == OptimizerSpec::Type::adamw;
        const float l2 = decoupled ? 0.0f : wd, decay = decoupled && e.decay ? lr * wd : 0.0f;
        const AdamStep k{decay, gs, l2, b1, c1, b2, c2, alpha, eps};
        static const bool avx512 = avx512_allowed();
        if (avx512)
          adam_step_avx512(k, w, grad, e.slot[0], e.slot[1], n);
        else
          adam_step(k, w, grad, e.slot[0], e.slot[1], n);
        break;
      }
      case OptimizerSpec::Type::rmsprop: {
        const RmspropStep k{lr, gs, wd, static_cast<float>(spec_.rho), static_cast<float>(1.0 - spec_.rho),
                            static_cast<float>(spec_.momentum), static_cast<float>(spec_.epsilon)};
        const bool momentum = spec_.momentum > 0, centered = spec_.centered;
        float* ms = e.slot[0];
        float* mom = momentum ? e.slot[1] : nullptr;
        float* avg = centered ? e.slot[momentum ? 2 : 1] : nullptr;
        if (momentum && centered) rmsprop_step<true, true>(k, w, grad, n, ms, mom, avg);
        else if (momentum) rmsprop_step<true, false>(k, w, grad, n, ms, mom, avg);
        else if (centered) rmsprop_step<false, true>(k, w, grad, n, ms, mom, avg);
        else rmsprop_step<false, false>(k, w, grad, n, ms, mom, avg);
        break;
      }
    }
    ++p.version;
  }
}

}  // namespace onednn
