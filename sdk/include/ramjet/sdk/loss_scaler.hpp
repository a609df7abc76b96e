// Dynamic loss scaling, for a precision policy whose compute dtype has too few exponent bits for small gradients
// (float16: below 2^-24 they flush to zero). The loss is multiplied by `scale` before backward; a step whose
// gradients came out inf or NaN is skipped and the scale halved; after `growth_interval` finite steps in a row
// the scale doubles. The rule of Keras's LossScaleOptimizer and PyTorch's GradScaler.
//
//   ramjet::DynamicLossScaler scaler(config);        // its settings: DynamicLossScaler::fields()
//   float s = scaler.scale();                        // before backward
//   bool skip = scaler.update(found_nonfinite);      // after it
//   std::string state = scaler.save_state();         // a checkpoint's; restore_state() reads it back
#ifndef RAMJET_SDK_LOSS_SCALER_HPP
#define RAMJET_SDK_LOSS_SCALER_HPP

#include <ramjet/abi.h>
#include <ramjet/sdk/config.hpp>
#include <ramjet/sdk/error.hpp>
#include <ramjet/sdk/fields.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace ramjet {

class DynamicLossScaler {
 public:
  // Defaults: Keras's (initial 2^15, growth every 2000 finite steps, ×2 up, ÷2 down). PyTorch's GradScaler starts
  // one doubling higher (2^16); the first overflowing step brings it down to where Keras starts.
  static constexpr double kInitialScale = 32768.0;
  static constexpr int64_t kGrowthInterval = 2000;

  static Fields fields() {
    return {Field::number("initial_scale").above(0).at_most(std::numeric_limits<float>::max()).fallback(kInitialScale)
                .doc("the loss scale of the first step"),
            Field::integer("growth_interval").at_least(1).fallback(kGrowthInterval)
                .doc("finite steps in a row after which the scale grows"),
            Field::number("growth_factor").above(1).at_most(1024).fallback(2.0).doc("what the scale grows by"),
            Field::number("backoff_factor").above(0).below(1).fallback(0.5)
                .doc("what the scale is multiplied by after a step whose gradients overflowed")};
  }

  explicit DynamicLossScaler(const Config& config) {
    const nlohmann::json c = fields().with_defaults(config.json());
    scale_ = static_cast<float>(c["initial_scale"].get<double>());
    growth_interval_ = c["growth_interval"].get<int64_t>();
    growth_factor_ = static_cast<float>(c["growth_factor"].get<double>());
    backoff_factor_ = static_cast<float>(c["backoff_factor"].get<double>());
  }

  float scale() const { return scale_; }
  int64_t good_steps() const { return good_steps_; }

  // After a step's backward. Returns whether the step's update must be skipped.
  bool update(bool found_nonfinite) {
    if (found_nonfinite) {
      // Never to zero: a scale of 0 would make every later gradient 0 and every step "finite".
      scale_ = std::max(scale_ * backoff_factor_, std::numeric_limits<float>::min());
      good_steps_ = 0;
      return true;
    }
    if (++good_steps_ >= growth_interval_) {
      const float grown = scale_ * growth_factor_;
      if (std::isfinite(grown)) scale_ = grown;  // at float's top the scale stays where it is
      good_steps_ = 0;
    }
    return false;
  }

  // {"scale": S, "good_steps": N}: JSON prints S with enough digits to read back the same float.
  std::string save_state() const {
    return nlohmann::json{{"scale", scale_}, {"good_steps", good_steps_}}.dump();
  }

  // Refuses a state that is not this scaler's, or whose values could not have come from it, naming the field.
  void restore_state(std::string_view state) {
    auto refuse = [](const std::string& why) {
      return Error(RAMJET_ERR_CORRUPT_DATA, "loss scaler state: " + why);
    };
    const nlohmann::json j = nlohmann::json::parse(state.begin(), state.end(), nullptr, false);
    if (!j.is_object() || !j.contains("scale") || !j.contains("good_steps"))
      throw refuse("expected {\"scale\", \"good_steps\"}, got " + std::to_string(state.size()) +
                   " bytes that are not (another precision policy's checkpoint?)");
    const nlohmann::json& s = j["scale"];
    const nlohmann::json& g = j["good_steps"];
    if (!s.is_number() || !(s.get<double>() > 0) || !(s.get<double>() <= std::numeric_limits<float>::max()))
      throw refuse("'scale' must be a positive float32, got " + s.dump());
    if (!g.is_number_integer() || g.get<int64_t>() < 0 || g.get<int64_t>() >= growth_interval_)
      throw refuse("'good_steps' must be an integer in [0, growth_interval " + std::to_string(growth_interval_) +
                   "), got " + g.dump());
    scale_ = s.get<float>();
    good_steps_ = g.get<int64_t>();
  }

 private:
  float scale_ = static_cast<float>(kInitialScale);
  float growth_factor_ = 2.0f, backoff_factor_ = 0.5f;
  int64_t growth_interval_ = kGrowthInterval;
  int64_t good_steps_ = 0;
};

}  // namespace ramjet

#endif  // RAMJET_SDK_LOSS_SCALER_HPP
