#include "ramjet/train/progress.hpp"

#include <algorithm>
#include <cstdio>
#include <ostream>

namespace ramjet::core {
namespace {

std::string fixed(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%.4f", v);
  return s;
}

}  // namespace

void Metrics::add(double loss, int64_t right, int64_t n, int64_t positions) {
  const int64_t weight = positions < 0 ? n : positions;
  loss_sum += loss * static_cast<double>(weight);
  counted += weight;
  samples += n;
  if (right < 0) has_accuracy = false;
  else correct += right;
}
double Metrics::loss() const { return counted ? loss_sum / static_cast<double>(counted) : 0.0; }
double Metrics::accuracy() const { return counted ? static_cast<double>(correct) / static_cast<double>(counted) : 0.0; }

void ProgressReporter::step(int64_t epoch, int64_t step, int64_t steps, const Metrics& m, double samples_per_s,
                            double elapsed) {
  if (!out_ || !terminal_) return;
  const auto now = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(now - last_).count() < 0.1 && step != steps) return;
  last_ = now;
  char bar[31] = {};
  const int filled = steps > 0 ? static_cast<int>(30 * step / steps) : 0;
  for (int i = 0; i < 30; ++i) bar[i] = i < filled ? '=' : (i == filled ? '>' : '.');
  const double eta = steps > 0 && step > 0 ? elapsed * static_cast<double>(steps - step) / static_cast<double>(step) : 0;
  char line[256];
  std::snprintf(line, sizeof line, "\rEpoch %lld/%lld %5lld/%-5lld [%s] - loss: %.4f%s - %.0f samples/s - ETA: %.0fs ",
                static_cast<long long>(epoch + 1), static_cast<long long>(epochs_), static_cast<long long>(step),
                static_cast<long long>(steps), bar, m.loss(),
                m.has_accuracy ? (" - accuracy: " + fixed(m.accuracy())).c_str() : "", samples_per_s, eta);
  *out_ << line << std::flush;
}

void ProgressReporter::epoch(const nlohmann::json& h, int64_t steps, double seconds) {
  if (!out_) return;
  std::string text = "Epoch " + std::to_string(h["epoch"].get<int64_t>()) + "/" + std::to_string(epochs_) + ": " +
                     std::to_string(steps) + " steps, ";
  char s[64];
  std::snprintf(s, sizeof s, "%.1f s", seconds);
  text += s;
  text += " - loss: " + fixed(h["loss"]);
  if (h.contains("accuracy")) text += " - accuracy: " + fixed(h["accuracy"]);
  // val_loss, then the model's metrics on the eval data (by name).
  if (h.contains("val_loss")) text += " - val_loss: " + fixed(h["val_loss"]);
  for (const auto& [key, value] : h.items())
    if (key.rfind("val_", 0) == 0 && key != "val_loss" && value.is_number()) text += " - " + key + ": " + fixed(value);
  std::snprintf(s, sizeof s, " - lr: %.3g", h["lr"].get<double>());
  text += s;
  if (terminal_) *out_ << "\r\033[K";
  *out_ << text << "\n" << std::flush;
}

void ProgressReporter::summary(const nlohmann::json& report) {
  if (!out_) return;
  const auto& t = report["train"];
  char line[256];
  std::snprintf(line, sizeof line, "trained %lld steps in %.1f s, %.0f samples/s, input wait %.1f%%",
                static_cast<long long>(t["steps"].get<int64_t>()), t["wall_s"].get<double>(),
                t["samples_per_s"].get<double>(), 100 * t["input_wait_fraction"].get<double>());
  *out_ << line;
  if (report.contains("eval")) {
    *out_ << "; test loss " << fixed(report["eval"]["loss"]);
    for (const auto& [key, value] : report["eval"].items())
      if (key != "loss" && key != "restored_best_epoch" && value.is_number_float()) *out_ << ", " << key << " " << fixed(value);
  }
  *out_ << "\n";
  if (t.contains("verdict")) verdict(t["verdict"]);
}

void ProgressReporter::verdict(const nlohmann::json& v) {
  const auto& b = v["breakdown"];
  const double wall = std::max(1e-12, b["wall_s"].get<double>());
  auto percent = [&](const char* key) { return 100 * b[key].get<double>() / wall; };
  char line[256];
  std::snprintf(line, sizeof line,
                "step time: input wait %.1f%%, compute %.1f%%, communication %.1f%%, other %.1f%%: %s input-bound\n",
                percent("input_wait_s"), percent("compute_s"), percent("communication_s"), percent("other_s"),
                v["input_bound"].get<std::string>().c_str());
  *out_ << line;
  for (const auto& advice : v["advice"]) *out_ << "  advice: " << advice.get<std::string>() << "\n";
}

}  // namespace ramjet::core
