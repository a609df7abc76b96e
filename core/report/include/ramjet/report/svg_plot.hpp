// Plots as inline SVG, so the report is one file that needs nothing at view time: a line chart (axes, ticks,
// one polyline per series, a legend) and a horizontal stacked bar. Every polyline has class "series" and every
// bar segment class "segment", so a test (or a reader's stylesheet) can find them.
#pragma once

#include <string>
#include <vector>

namespace ramjet::core {

struct PlotPoint {
  double x = 0, y = 0;
};

struct Series {
  std::string name;   // the legend's words
  std::string color;  // a CSS colour
  bool dashed = false;
  double width = 2.2;  // stroke width: lines drawn first can be wider, so one that another covers still shows
  std::string key;    // data-series attribute, e.g. "loss/validation/1"
  std::vector<PlotPoint> points;
};

struct LineChart {
  std::string title, x_label, y_label;
  std::vector<Series> series;
  bool integer_x = true;    // x counts epochs: ticks only at whole numbers
  bool y_from_zero = false;  // throughput and rates: bars of a staircase should start at zero
};

// An <svg> element; the series without points are left out (a chart without any says so).
std::string render_line_chart(const LineChart& chart);

struct BarSegment {
  std::string name;   // "input wait"
  std::string color;
  double value = 0;   // seconds, for example
};

// One horizontal bar of `segments` laid end to end on an axis from 0 to `axis_max` (shared by the bars of several
// runs, so their lengths compare), ticks in `unit`, and a legend of the segments.
std::string render_stacked_bar(const std::vector<BarSegment>& segments, double axis_max, const std::string& unit);

// Round tick values covering [lo, hi] (steps of 1, 2 or 5 times a power of ten), about `target` of them.
std::vector<double> nice_ticks(double lo, double hi, int target = 5);

}  // namespace ramjet::core
