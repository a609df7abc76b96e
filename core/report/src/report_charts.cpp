#include "report_charts.hpp"

#include <algorithm>
#include <optional>
#include <set>

namespace ramjet::core {
namespace {

using Metric = std::optional<double> EpochRecord::*;

// Runs of one model with one seed often train identically (a staircase changes only speed): the first run's line
// is the widest and each later one narrower, drawn on top, so a covered line still shows as a coloured edge.
double stroke_width(size_t index, size_t runs) {
  return std::min(2.0 + 1.6 * static_cast<double>(runs - 1 - index), 7.0);
}

Series curve(const LabelledRun& r, size_t index, size_t runs, Metric metric, const std::string& chart, bool validation) {
  Series s;
  s.width = stroke_width(index, runs);
  s.name = r.label + (validation ? " · validation" : " · training");
  s.color = run_color(index);
  s.dashed = validation;
  s.key = chart + "/" + (validation ? "validation" : "training") + "/" + std::to_string(index);
  for (const auto& e : r.run.history)
    if (const auto& v = e.*metric) s.points.push_back({static_cast<double>(e.epoch), *v});
  return s;
}

// A curve that has no training/validation pair (learning rate, throughput): named by the run alone.
Series single_curve(const LabelledRun& r, size_t index, size_t runs, Metric metric, const std::string& chart) {
  Series s = curve(r, index, runs, metric, chart, false);
  s.name = r.label;
  s.key = chart + "/" + std::to_string(index);
  return s;
}

}  // namespace

std::vector<LineChart> history_charts(const std::vector<LabelledRun>& runs) {
  LineChart loss{"Loss", "epoch", "loss", {}, true, false};
  LineChart accuracy{"Accuracy", "epoch", "accuracy", {}, true, false};
  LineChart lr{"Learning rate (end of epoch)", "epoch", "learning rate", {}, true, true};
  LineChart speed{"Samples/s per epoch", "epoch", "samples/s", {}, true, true};
  for (size_t i = 0; i < runs.size(); ++i) {
    loss.series.push_back(curve(runs[i], i, runs.size(), &EpochRecord::loss, "loss", false));
    loss.series.push_back(curve(runs[i], i, runs.size(), &EpochRecord::val_loss, "loss", true));
    accuracy.series.push_back(curve(runs[i], i, runs.size(), &EpochRecord::accuracy, "accuracy", false));
    accuracy.series.push_back(curve(runs[i], i, runs.size(), &EpochRecord::val_accuracy, "accuracy", true));
    lr.series.push_back(single_curve(runs[i], i, runs.size(), &EpochRecord::lr, "lr"));
    speed.series.push_back(single_curve(runs[i], i, runs.size(), &EpochRecord::samples_per_s, "samples_per_s"));
  }
  std::vector<LineChart> charts = {loss, accuracy};
  // A chart for each other metric any run measured on its eval data (a regression's MAE, PSNR, SSIM, ...).
  std::set<std::string> names;
  for (const auto& r : runs)
    for (const auto& e : r.run.history)
      for (const auto& [name, value] : e.val_metrics) names.insert(name);
  for (const auto& name : names) {
    LineChart chart{"Validation " + name, "epoch", name, {}, true, false};
    for (size_t i = 0; i < runs.size(); ++i) {
      Series s = curve(runs[i], i, runs.size(), &EpochRecord::val_loss, name, true);
      s.points.clear();
      for (const auto& e : runs[i].run.history)
        if (auto it = e.val_metrics.find(name); it != e.val_metrics.end())
          s.points.push_back({static_cast<double>(e.epoch), it->second});
      chart.series.push_back(std::move(s));
    }
    charts.push_back(std::move(chart));
  }
  charts.push_back(lr);
  charts.push_back(speed);
  return charts;
}

std::string breakdown_bar(const StepBreakdown& b, double axis_max) {
  // Input wait in the warm colour: it is the part the pipeline's settings can remove.
  return render_stacked_bar({{"input wait", "#D55E00", b.input_wait_s},
                             {"compute", "#0072B2", b.compute_s},
                             {"communication", "#CC79A7", b.communication_s},
                             {"other", "#999999", b.other_s}},
                            axis_max, "s");
}

}  // namespace ramjet::core
