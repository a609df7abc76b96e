#include "ramjet/report/svg_plot.hpp"

#include "ramjet/report/html_text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace ramjet::core {
namespace {

constexpr double kWidth = 600;
constexpr double kPlotHeight = 300;  // title, plot area and axis labels; the legend adds rows below
constexpr double kLeft = 72, kRight = 18, kTop = 40, kBottom = 48;
constexpr double kLegendRow = 20;
constexpr int kLegendColumns = 2;
constexpr size_t kLegendChars = 38;   // a legend cell is half the chart wide
constexpr size_t kMaxMarkers = 60;    // beyond this many epochs the markers would hide the line

// A coordinate. Absurd reports (values near the double's limits) can make one non-finite; "nan" in an SVG attribute
// is a console error in a browser, so such a point lands on the axis instead.
std::string num(double v) {
  if (!std::isfinite(v) || std::fabs(v) > 1e7) v = std::isfinite(v) ? std::copysign(1e7, v) : 0;
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", v);
  return text;
}

double tick_step(double span, int target, bool integer) {
  if (!(span > 0)) span = 1;
  const double raw = span / std::max(1, target);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / magnitude;
  double step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * magnitude;
  if (integer) step = std::max(1.0, std::round(step));
  return step;
}

// Labels of one axis with the decimals its step needs, so 0.25 and 0.5 read "0.25" and "0.50".
std::string tick_label(double v, double step) {
  if (std::fabs(v) < step * 1e-9) return "0";
  const double largest = std::fabs(v);
  if (step >= 1e-4 && largest < 1e6) {
    const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step) + 1e-9)));
    char text[48];
    std::snprintf(text, sizeof text, "%.*f", decimals, v);
    return text;
  }
  return format_number(v, 3);
}

std::string shortened(const std::string& text, size_t limit) {
  if (text.size() <= limit) return text;
  size_t cut = limit - 1;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "\xE2\x80\xA6";  // an ellipsis
}

struct Range {
  double lo = 0, hi = 1;
};

// The data's extent, widened when flat so the line sits in the middle instead of on an edge.
Range extent(const std::vector<const Series*>& series, bool x, bool from_zero) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto* s : series)
    for (const auto& p : s->points) {
      const double v = x ? p.x : p.y;
      if (!std::isfinite(v)) continue;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  if (!std::isfinite(lo)) return {};
  if (from_zero) lo = std::min(lo, 0.0), hi = std::max(hi, 0.0);
  if (hi - lo <= std::fabs(hi) * 1e-12) {
    const double pad = x ? 1.0 : (hi == 0 ? 1.0 : std::fabs(hi) * 0.1);
    lo -= from_zero && lo == 0 ? 0 : pad;
    hi += pad;
  }
  return {lo, hi};
}

}  // namespace

namespace {

// At least two finite ticks, whatever the data: round ones when the range allows, else its two ends.
std::vector<double> ticks_covering(double lo, double hi, int target, bool integer) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) lo = 0, hi = 1;
  if (hi < lo) std::swap(lo, hi);
  std::vector<double> ticks;
  const double step = tick_step(hi - lo, target, integer);
  if (std::isfinite(step) && step > 0) {
    const double first = std::floor(lo / step + 1e-9) * step, last = std::ceil(hi / step - 1e-9) * step;
    if (std::isfinite(first) && std::isfinite(last) && (last - first) / step <= 100)
      for (int i = 0; first + i * step <= last + step * 1e-6; ++i) ticks.push_back(first + i * step);
  }
  if (ticks.size() < 2 || !(ticks.back() > ticks.front())) ticks = {lo, hi > lo ? hi : lo + 1};
  return ticks;
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int target) { return ticks_covering(lo, hi, target, false); }

std::string render_line_chart(const LineChart& chart) {
  std::vector<const Series*> drawn;
  for (const auto& s : chart.series)
    if (!s.points.empty()) drawn.push_back(&s);

  const int legend_rows = static_cast<int>((drawn.size() + kLegendColumns - 1) / kLegendColumns);
  const double height = kPlotHeight + legend_rows * kLegendRow + (legend_rows > 0 ? 6 : 0);
  const double x0 = kLeft, x1 = kWidth - kRight, y0 = kTop, y1 = kPlotHeight - kBottom;

  std::string svg = "<svg class=\"chart\" viewBox=\"0 0 " + num(kWidth) + " " +
                    num(height) + "\" role=\"img\" aria-label=\"" + html_escape(chart.title) + "\">\n";
  svg += "<text class=\"chart-title\" x=\"" + num(kWidth / 2) + "\" y=\"22\" text-anchor=\"middle\">" +
         html_escape(chart.title) + "</text>\n";
  if (drawn.empty()) {
    svg += "<text class=\"no-data\" x=\"" + num(kWidth / 2) + "\" y=\"" + num((y0 + y1) / 2) +
           "\" text-anchor=\"middle\">not measured in these runs</text>\n</svg>\n";
    return svg;
  }

  // Axes: round ticks, and the plot area spans exactly the first to the last tick.
  const Range xr = extent(drawn, true, false), yr = extent(drawn, false, chart.y_from_zero);
  const std::vector<double> xticks = ticks_covering(xr.lo, xr.hi, 8, chart.integer_x);
  const std::vector<double> yticks = ticks_covering(yr.lo, yr.hi, 5, false);
  const double xlo = xticks.front(), xhi = xticks.back(), xstep = xticks[1] - xticks[0];
  const double ylo = yticks.front(), yhi = yticks.back(), ystep = yticks[1] - yticks[0];
  auto px = [&](double x) { return x0 + (x - xlo) / (xhi - xlo) * (x1 - x0); };
  auto py = [&](double y) { return y1 - (y - ylo) / (yhi - ylo) * (y1 - y0); };

  svg += "<g class=\"grid\">\n";
  for (double t : yticks) {
    svg += "<line x1=\"" + num(x0) + "\" x2=\"" + num(x1) + "\" y1=\"" + num(py(t)) + "\" y2=\"" + num(py(t)) + "\"/>\n";
  }
  svg += "</g>\n<g class=\"axis\">\n";
  svg += "<line x1=\"" + num(x0) + "\" x2=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" y2=\"" + num(y1) + "\"/>\n";
  svg += "<line x1=\"" + num(x0) + "\" x2=\"" + num(x0) + "\" y1=\"" + num(y0) + "\" y2=\"" + num(y1) + "\"/>\n";
  for (double t : yticks)
    svg += "<text x=\"" + num(x0 - 6) + "\" y=\"" + num(py(t) + 4) + "\" text-anchor=\"end\">" + tick_label(t, ystep) +
           "</text>\n";
  for (double t : xticks) {
    svg += "<line x1=\"" + num(px(t)) + "\" x2=\"" + num(px(t)) + "\" y1=\"" + num(y1) + "\" y2=\"" + num(y1 + 5) + "\"/>\n";
    svg += "<text x=\"" + num(px(t)) + "\" y=\"" + num(y1 + 18) + "\" text-anchor=\"middle\">" + tick_label(t, xstep) +
           "</text>\n";
  }
  svg += "<text class=\"axis-label\" x=\"" + num((x0 + x1) / 2) + "\" y=\"" + num(y1 + 38) +
         "\" text-anchor=\"middle\">" + html_escape(chart.x_label) + "</text>\n";
  svg += "<text class=\"axis-label\" transform=\"translate(16 " + num((y0 + y1) / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">" + html_escape(chart.y_label) + "</text>\n";
  svg += "</g>\n";

  for (const auto* s : drawn) {
    const std::string color = html_escape(s->color);
    svg += "<g class=\"run-series\">\n<polyline class=\"series\" data-series=\"" + html_escape(s->key) +
           "\" fill=\"none\" stroke-linejoin=\"round\" stroke=\"" + color + "\" stroke-width=\"" + num(s->width) + "\"" +
           (s->dashed ? " stroke-dasharray=\"7 4\"" : "") + " points=\"";
    for (size_t i = 0; i < s->points.size(); ++i)
      svg += (i ? " " : "") + num(px(s->points[i].x)) + "," + num(py(s->points[i].y));
    svg += "\"><title>" + html_escape(s->name) + "</title></polyline>\n";
    if (s->points.size() <= kMaxMarkers)
      for (const auto& p : s->points)
        svg += "<circle class=\"point\" cx=\"" + num(px(p.x)) + "\" cy=\"" + num(py(p.y)) + "\" r=\"3\" fill=\"" +
               (s->dashed ? std::string("#fff") : color) + "\" stroke=\"" + color + "\" stroke-width=\"1.5\"><title>" +
               html_escape(s->name) + " — " + html_escape(chart.x_label) + " " + format_number(p.x) + ": " +
               format_number(p.y) + "</title></circle>\n";
    svg += "</g>\n";
  }

  svg += "<g class=\"legend\">\n";
  const double cell = (x1 - x0) / kLegendColumns;
  for (size_t i = 0; i < drawn.size(); ++i) {
    const double lx = x0 + static_cast<double>(i % kLegendColumns) * cell;
    const double ly = kPlotHeight + static_cast<double>(i / kLegendColumns) * kLegendRow + 4;
    svg += "<line x1=\"" + num(lx) + "\" x2=\"" + num(lx + 26) + "\" y1=\"" + num(ly) + "\" y2=\"" + num(ly) +
           "\" stroke=\"" + html_escape(drawn[i]->color) + "\" stroke-width=\"" + num(std::min(drawn[i]->width, 4.0)) + "\"" +
           (drawn[i]->dashed ? " stroke-dasharray=\"7 4\"" : "") + "/>\n";
    svg += "<text x=\"" + num(lx + 32) + "\" y=\"" + num(ly + 4) + "\">" +
           html_escape(shortened(drawn[i]->name, kLegendChars)) + "</text>\n";
  }
  svg += "</g>\n</svg>\n";
  return svg;
}

std::string render_stacked_bar(const std::vector<BarSegment>& segments, double axis_max, const std::string& unit) {
  constexpr double kBarTop = 8, kBarHeight = 30, kLeftPad = 10, kRightPad = 24;
  double total = 0;
  for (const auto& s : segments) total += std::max(0.0, s.value);
  if (!(axis_max > 0)) axis_max = total > 0 ? total : 1;
  const std::vector<double> ticks = nice_ticks(0, axis_max, 6);
  const double axis_end = std::max(ticks.back(), axis_max);
  const double step = ticks[1] - ticks[0];
  const double x0 = kLeftPad, x1 = kWidth - kRightPad;
  auto px = [&](double v) { return x0 + v / axis_end * (x1 - x0); };
  const double axis_y = kBarTop + kBarHeight + 4;
  const double legend_y = axis_y + 34;
  const double height = legend_y + 10;

  std::string svg = "<svg class=\"bar\" viewBox=\"0 0 " + num(kWidth) + " " +
                    num(height) + "\" role=\"img\" aria-label=\"step-time breakdown\">\n";
  double at = 0;
  for (const auto& s : segments) {
    if (!(s.value > 0)) continue;
    const double x = px(at), w = px(at + s.value) - x;
    const std::string share = total > 0 ? format_percent(s.value / total) : "";
    svg += "<rect class=\"segment\" data-part=\"" + html_escape(s.name) + "\" x=\"" + num(x) + "\" y=\"" +
           num(kBarTop) + "\" width=\"" + num(std::max(w, 0.5)) + "\" height=\"" + num(kBarHeight) + "\" fill=\"" +
           html_escape(s.color) + "\"><title>" + html_escape(s.name) + ": " + format_number(s.value) + " " +
           html_escape(unit) + " (" + share + ")</title></rect>\n";
    if (w > 64)
      svg += "<text class=\"segment-label\" x=\"" + num(x + w / 2) + "\" y=\"" + num(kBarTop + kBarHeight / 2 + 4) +
             "\" text-anchor=\"middle\">" + share + "</text>\n";
    at += s.value;
  }
  svg += "<g class=\"axis\">\n<line x1=\"" + num(x0) + "\" x2=\"" + num(x1) + "\" y1=\"" + num(axis_y) + "\" y2=\"" +
         num(axis_y) + "\"/>\n";
  for (double t : ticks) {
    svg += "<line x1=\"" + num(px(t)) + "\" x2=\"" + num(px(t)) + "\" y1=\"" + num(axis_y) + "\" y2=\"" +
           num(axis_y + 4) + "\"/>\n";
    svg += "<text x=\"" + num(px(t)) + "\" y=\"" + num(axis_y + 16) + "\" text-anchor=\"middle\">" +
           tick_label(t, step) + (t == ticks.back() ? " " + html_escape(unit) : "") + "</text>\n";
  }
  svg += "</g>\n<g class=\"legend\">\n";
  double lx = x0;
  for (const auto& s : segments) {
    svg += "<rect x=\"" + num(lx) + "\" y=\"" + num(legend_y - 10) + "\" width=\"12\" height=\"12\" fill=\"" +
           html_escape(s.color) + "\"/>\n<text x=\"" + num(lx + 17) + "\" y=\"" + num(legend_y) + "\">" +
           html_escape(s.name) + " " + format_number(std::max(0.0, s.value), 3) + " " + html_escape(unit) + "</text>\n";
    lx += (x1 - x0) / std::max<size_t>(1, segments.size());
  }
  svg += "</g>\n</svg>\n";
  return svg;
}

}  // namespace ramjet::core
