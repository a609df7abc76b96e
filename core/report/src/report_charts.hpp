// The page's charts built from the runs: each curve of train.history as one line chart with every run overlaid.
#pragma once

#include "ramjet/report/report_page.hpp"
#include "ramjet/report/svg_plot.hpp"

#include <vector>

namespace ramjet::core {

// Loss, accuracy, learning rate, samples/s per epoch (in that order): training solid, validation dashed, one colour
// per run.
std::vector<LineChart> history_charts(const std::vector<LabelledRun>& runs);

// The run's train.verdict.breakdown as one stacked bar on an axis shared by all runs (0 to `axis_max` seconds).
std::string breakdown_bar(const StepBreakdown& breakdown, double axis_max);

}  // namespace ramjet::core
