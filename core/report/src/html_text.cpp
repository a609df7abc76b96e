#include "ramjet/report/html_text.hpp"

#include <cmath>
#include <cstdio>

namespace ramjet::core {

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string format_number(double value, int significant) {
  if (!std::isfinite(value)) return std::isnan(value) ? "NaN" : value > 0 ? "inf" : "-inf";
  if (value == 0) return "0";
  const double magnitude = std::fabs(value);
  char text[352];  // room for any double in %f or %g (the compiler cannot see that the branches bound it)
  if (magnitude >= 1e-3 && magnitude < 1e6) {
    // Fixed notation with as many decimals as the significant digits need (none for large values).
    const int digits_before = static_cast<int>(std::floor(std::log10(magnitude))) + 1;
    const int decimals = std::max(0, significant - digits_before);
    std::snprintf(text, sizeof text, "%.*f", decimals, value);
    std::string s = text;
    if (s.find('.') != std::string::npos) {
      while (s.back() == '0') s.pop_back();
      if (s.back() == '.') s.pop_back();
    }
    return s;
  }
  std::snprintf(text, sizeof text, "%.*g", std::max(1, significant - 1), value);
  return text;
}

std::string format_seconds(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0 || seconds > 1e9) return format_number(seconds, 3) + " s";
  char text[64];
  if (seconds < 60) return format_number(seconds, 3) + " s";
  const auto whole = static_cast<long long>(std::llround(seconds));
  if (whole < 3600) {
    std::snprintf(text, sizeof text, "%lld min %lld s", whole / 60, whole % 60);
    return text;
  }
  std::snprintf(text, sizeof text, "%lld h %02lld min", whole / 3600, (whole % 3600) / 60);
  return text;
}

std::string format_percent(double fraction) {
  if (!std::isfinite(fraction)) return format_number(fraction);
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %%", 100.0 * fraction);
  return text;
}

}  // namespace ramjet::core
