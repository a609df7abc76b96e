// `ramjet report`: one self-contained HTML page (inline CSS and SVG, no script, nothing fetched at view time) from
// one or more training-run reports — a summary table with speed-ups against the first run, the loss, accuracy,
// learning-rate and throughput curves of every run overlaid, and per run where the step time went, the input
// pipeline's tuned settings and the input-bound verdict with its advice.
#pragma once

#include "ramjet/report/run_report.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace ramjet::core {

struct LabelledRun {
  std::string label;  // the short name the page gives the run
  RunReport run;
};

// Reads every report (read_run_report) and names each run: labels[i], or without labels the report file's name
// without its extension ("fp32" for runs/fp32.json). Throws InvalidInput when labels are given but not one per
// report, or when a report is refused.
std::vector<LabelledRun> read_labelled_runs(const std::vector<std::filesystem::path>& files,
                                            const std::vector<std::string>& labels);

// The page. `title` defaults to one naming the runs' manifests. The first run is the baseline of the speed-ups.
std::string render_report_page(const std::vector<LabelledRun>& runs, const std::string& title = "");

// The colour of the i-th run on every chart (Okabe and Ito's palette, told apart with colour-vision deficiencies).
const char* run_color(size_t index);

}  // namespace ramjet::core
