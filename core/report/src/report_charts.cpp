#include "report_charts.hpp"

#include <optional>

namespace ramjet::core {
namespace {

using Metric = std::optional<double> EpochRecord::*;

Series curve(const LabelledRun& r, size_t index, Metric metric, const std::string& chart, bool validation) {
  Series s;
  s.name = r.label + (validation ? " · validation" : " · training");
  s.color = run_color(index);
  s.dashed = validation;
  s.key = chart + "/" + (validation ? "validation" : "training") + "/" + std::to_string(index);
  for (const auto& e : r.run.history)
    if (const auto& v = e.*metric) s.points.push_back({static_cast<double>(e.epoch), *v});
  return s;
}

// A curve that has no training/validation pair (learning rate, throughput): named by the run alone.
Series single_curve(const LabelledRun& r, size_t index, Metric metric, const std::string& chart) {
  Series s = curve(r, index, metric, chart, false);
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
    loss.series.push_back(curve(runs[i], i, &EpochRecord::loss, "loss", false));
    loss.series.push_back(curve(runs[i], i, &EpochRecord::val_loss, "loss", true));
    accuracy.series.push_back(curve(runs[i], i, &EpochRecord::accuracy, "accuracy", false));
    accuracy.series.push_back(curve(runs[i], i, &EpochRecord::val_accuracy, "accuracy", true));
    lr.series.push_back(single_curve(runs[i], i, &EpochRecord::lr, "lr"));
    speed.series.push_back(single_curve(runs[i], i, &EpochRecord::samples_per_s, "samples_per_s"));
  }
  return {loss, accuracy, lr, speed};
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
