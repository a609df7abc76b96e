#include "ramjet/report/report_page.hpp"

#include "ramjet/plugin/failure.hpp"
#include "ramjet/report/html_text.hpp"
#include "report_charts.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

namespace ramjet::core {
namespace {

// Inline, so the file stands alone; print-friendly and readable at 1280 px.
const char* kStyle = R"css(
:root { --ink: #1d2330; --muted: #5b6475; --line: #dde1e8; --card: #ffffff; --page: #f4f6f9; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--page); color: var(--ink);
       font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
main { max-width: 1240px; margin: 0 auto; padding: 24px 28px 40px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 28px 0 10px; }
h3 { font-size: 17px; margin: 0 0 2px; display: flex; align-items: center; gap: 8px; flex-wrap: wrap; }
h4 { font-size: 14px; margin: 16px 0 6px; color: var(--muted); text-transform: uppercase; letter-spacing: .04em; }
.subtitle, .note, .meta { color: var(--muted); font-size: 13.5px; margin: 4px 0; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 16px 18px; overflow-x: auto; }
table { border-collapse: collapse; width: 100%; }
th, td { padding: 7px 8px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
table.summary td { font-size: 14px; }
table.summary .badge { white-space: normal; }
table.summary td:first-child { min-width: 170px; }
th { font-size: 12px; color: var(--muted); font-weight: 600; text-transform: uppercase; letter-spacing: .03em; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
th.num { text-align: right; }
tr:last-child td { border-bottom: none; }
.swatch { display: inline-block; width: 12px; height: 12px; border-radius: 3px; vertical-align: -1px; margin-right: 6px; }
.label { font-weight: 600; }
.manifest { overflow-wrap: anywhere; font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12.5px; color: var(--muted); font-weight: normal; }
.speedup { font-weight: 700; }
.charts { display: grid; grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 16px; }
.charts .card { padding: 8px; }
svg { width: 100%; height: auto; display: block; font-size: 12px; fill: var(--ink); }
svg .chart-title { font-size: 15px; font-weight: 600; }
svg .axis line { stroke: #7a8294; stroke-width: 1; }
svg .grid line { stroke: #e8ebf0; stroke-width: 1; }
svg .axis-label { fill: var(--muted); font-size: 12.5px; }
svg .no-data { fill: var(--muted); font-style: italic; }
svg .segment-label { fill: #fff; font-size: 12px; font-weight: 600; }
.runs { display: grid; gap: 16px; }
.badge { display: inline-block; padding: 2px 9px; border-radius: 999px; font-size: 12.5px; font-weight: 600; white-space: nowrap; }
.bound-not { background: #e3f4ea; color: #1b6b3a; }
.bound-moderately { background: #fdf0d8; color: #8a5a00; }
.bound-highly { background: #fbe1da; color: #a0300f; }
.bound-unknown { background: #eceef2; color: var(--muted); }
.columns { display: grid; grid-template-columns: minmax(0, 1.1fr) minmax(0, 1fr); gap: 20px; }
ul.advice { margin: 6px 0 0; padding-left: 20px; }
ul.advice li { margin: 3px 0; }
table.settings td:first-child { color: var(--muted); white-space: nowrap; width: 34%; }
code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12.5px; }
footer { margin-top: 30px; color: var(--muted); font-size: 12.5px; }
)css";

constexpr const char* kPalette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"};
constexpr size_t kMaxDecisionsShown = 12;

// One row of a two-column settings table; `value` is HTML (escaped by the caller where it comes from a file).
std::string row(const std::string& name, const std::string& value) {
  return "<tr><td>" + name + "</td><td>" + value + "</td></tr>\n";
}

std::string or_dash(const std::optional<double>& v, int significant = 4) {
  return v ? format_number(*v, significant) : "—";
}

// A path that may wrap after its slashes in a narrow column.
std::string breakable_path(const std::string& path) {
  std::string out;
  for (char c : html_escape(path)) out += c == '/' ? std::string("/<wbr>") : std::string(1, c);
  return out;
}

std::string swatch(size_t index) {
  return std::string("<span class=\"swatch\" style=\"background:") + run_color(index) + "\"></span>";
}

std::string bound_class(const std::optional<Verdict>& v) { return v ? "bound-" + v->input_bound : "bound-unknown"; }

std::string bound_words(const std::optional<Verdict>& v) {
  if (!v) return "no verdict";
  return v->input_bound == "not" ? std::string("not input-bound") : v->input_bound + " input-bound";
}

// The badge and the share of time spent waiting: escaped here, once.
std::string verdict_badge(const std::optional<Verdict>& v, bool wait_below) {
  std::string h = "<span class=\"badge " + bound_class(v) + "\">" + html_escape(bound_words(v)) + "</span>";
  if (v) h += std::string(wait_below ? "<br>" : " ") + "<span class=\"meta\">" + format_percent(v->input_wait_fraction) +
              " input wait</span>";
  return h;
}

// "float32 · 1 replica", what tells the runs of a staircase apart at a glance; the run's card adds the backend.
std::string run_settings(const RunReport& r, bool with_backend) {
  std::vector<std::string> parts;
  if (!r.precision.empty()) parts.push_back(r.precision);
  parts.push_back(std::to_string(r.replicas) + (r.replicas == 1 ? " replica" : " replicas"));
  if (!r.strategy.empty() && r.strategy != "single") parts.push_back(r.strategy);
  if (with_backend && !r.backend.empty()) parts.push_back("backend " + r.backend);
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : " · ") + html_escape(p);
  return out;
}

std::string speedup(const RunReport& run, const RunReport& baseline, bool is_baseline) {
  if (is_baseline) return "1.00×<br><span class=\"meta\">(baseline)</span>";
  if (!(baseline.samples_per_s > 0)) return "—";
  char text[32];
  std::snprintf(text, sizeof text, "%.2f×", run.samples_per_s / baseline.samples_per_s);
  return text;
}

std::string summary_table(const std::vector<LabelledRun>& runs) {
  std::string h = "<div class=\"card\"><table class=\"summary\">\n<thead><tr><th>run</th><th>settings</th>"
                  "<th class=\"num\">epochs</th><th class=\"num\">wall time</th><th class=\"num\">samples/s</th>"
                  "<th class=\"num\">speed-up vs first</th><th class=\"num\">final loss</th>"
                  "<th class=\"num\">final accuracy</th><th class=\"num\">test accuracy</th><th>verdict</th></tr></thead>\n"
                  "<tbody>\n";
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunReport& r = runs[i].run;
    h += "<tr class=\"run-row\"><td>" + swatch(i) + "<span class=\"label\">" + html_escape(runs[i].label) +
         "</span><br><span class=\"manifest\">" + breakable_path(r.manifest) + "</span></td>";
    h += "<td class=\"meta\">" + run_settings(r, false) + "</td>";
    h += "<td class=\"num\">" + std::to_string(r.history.size()) + (r.stopped_early ? " (stopped early)" : "") + "</td>";
    h += "<td class=\"num\">" + format_seconds(r.wall_s) + "</td>";
    h += "<td class=\"num\">" + format_number(r.samples_per_s) + "</td>";
    h += "<td class=\"num speedup\">" + speedup(r, runs.front().run, i == 0) + "</td>";
    h += "<td class=\"num\">" + or_dash(r.final_loss) + "</td>";
    h += "<td class=\"num\">" + or_dash(r.final_accuracy) + "</td>";
    h += "<td class=\"num\">" + or_dash(r.eval_accuracy) + "</td>";
    h += "<td>" + verdict_badge(r.verdict, true) + "</td></tr>\n";
  }
  h += "</tbody></table></div>\n<p class=\"note\">Speed-up: the run's samples/s (samples trained over the training "
       "loop's wall time, input waits included) divided by the first run's. Test accuracy: top-1 on "
       "<code>data.eval</code> after the last epoch.</p>\n";
  return h;
}

std::string tuned(const std::optional<bool>& tuned, const std::optional<int64_t>& limit) {
  if (!tuned) return "";
  if (!*tuned) return " <span class=\"meta\">(as written)</span>";
  return " <span class=\"meta\">(autotuned" + (limit ? ", limit " + std::to_string(*limit) : std::string()) +
         ")</span>";
}

std::string pipeline_table(const PipelineSettings& p) {
  std::string h = "<table class=\"settings\">\n";
  if (p.parallelism)
    h += row("parallelism", std::to_string(*p.parallelism) + tuned(p.parallelism_tuned, p.parallelism_limit));
  if (p.prefetch) h += row("prefetch", std::to_string(*p.prefetch) + " batches" + tuned(p.prefetch_tuned, p.prefetch_limit));
  if (p.cache_kind) {
    std::string cache = html_escape(*p.cache_kind);
    if (p.cache_elements) cache += ", " + std::to_string(*p.cache_elements) + " elements";
    if (p.cache_complete) cache += *p.cache_complete ? ", complete" : ", partial";
    h += row("cache", cache);
  } else {
    h += row("cache", "none");
  }
  if (p.deterministic) h += row("deterministic", *p.deterministic ? "yes" : "no");
  if (p.input_wait_s) h += row("input wait", format_seconds(*p.input_wait_s));
  if (p.skipped && *p.skipped > 0) h += row("skipped elements", std::to_string(*p.skipped));
  h += "</table>\n";
  if (!p.decisions.empty()) {
    h += "<h4>Autotuner decisions</h4><ul class=\"advice\">\n";
    for (size_t i = 0; i < p.decisions.size() && i < kMaxDecisionsShown; ++i) {
      const auto& d = p.decisions[i];
      h += "<li>after " + std::to_string(d.after_batches) + " batches: " + html_escape(d.knob) + " → " +
           std::to_string(d.value) + (d.why.empty() ? "" : " <span class=\"meta\">(" + html_escape(d.why) + ")</span>") +
           "</li>\n";
    }
    if (p.decisions.size() > kMaxDecisionsShown)
      h += "<li class=\"meta\">… and " + std::to_string(p.decisions.size() - kMaxDecisionsShown) + " more</li>\n";
    h += "</ul>\n";
  }
  return h;
}

std::string export_table(const ExportSummary& x) {
  std::string h = "<h4>Export</h4><table class=\"settings\">\n";
  if (!x.format.empty() || !x.path.empty())
    h += row("file", html_escape(x.format) + " <code>" + html_escape(x.path) + "</code>");
  if (x.size_ratio) h += row("size vs fp32 weights", format_percent(*x.size_ratio));
  if (x.fp32_accuracy || x.int8_accuracy)
    h += row("accuracy fp32 → int8", or_dash(x.fp32_accuracy) + " → " + or_dash(x.int8_accuracy));
  if (x.fp32_samples_per_s || x.int8_samples_per_s)
    h += row("inference samples/s fp32 → int8", or_dash(x.fp32_samples_per_s) + " → " + or_dash(x.int8_samples_per_s));
  return h + "</table>\n";
}

// How the replicas shared the gradients: the buckets, and how much of their all-reduce backward hid.
std::string strategy_table(const StrategySummary& d, int64_t replicas) {
  auto or_dash_as = [](const std::optional<double>& v, auto format) { return v ? format(*v) : std::string("—"); };
  std::string h = "<h4>Gradient all-reduce (train.strategy)</h4>\n<table class=\"settings\">\n";
  h += row("replicas", std::to_string(replicas));
  std::string split;
  if (d.split_gradients > 0)
    split = ", " + std::to_string(d.split_gradients) + (d.split_gradients == 1 ? " gradient" : " gradients") +
            " sent in row pieces";
  h += row("buckets", std::to_string(d.buckets) + " (" + format_number(static_cast<double>(d.bucket_bytes) / 1e6) +
                          " MB of gradients" + split + ")");
  h += row("all-reduce per step, not hidden",
           or_dash_as(d.all_reduce_s_per_step, [](double v) { return format_seconds(v); }));
  h += row("all-reduce per step, alone", or_dash_as(d.unhidden_all_reduce_s_per_step, [](double v) { return format_seconds(v); }));
  h += row("hidden behind backward", d.overlapped ? or_dash_as(d.hidden_fraction, [](double v) { return format_percent(v); })
                                                  : std::string("none (the strategy has no non-blocking all-reduce)"));
  h += row("samples/s per rank", or_dash(d.samples_per_s_per_rank));
  return h + "</table>\n";
}

std::string run_card(const LabelledRun& labelled, size_t index, double longest_wall) {
  const RunReport& r = labelled.run;
  std::string h = "<article class=\"card run\" id=\"run-" + std::to_string(index + 1) + "\">\n<h3>" + swatch(index) +
                  html_escape(labelled.label) + " <span class=\"manifest\">" + html_escape(r.manifest) + "</span> " +
                  verdict_badge(r.verdict, false) + "</h3>\n";
  h += "<p class=\"meta\">" + run_settings(r, true) + " · " + format_number(r.samples_per_s) + " samples/s over " +
       format_seconds(r.wall_s) + " · report <code>" + html_escape(r.file.string()) + "</code></p>\n";
  h += "<div class=\"columns\"><div>\n<h4>Where the training loop's time went</h4>\n";
  if (r.verdict) {
    h += breakdown_bar(r.verdict->breakdown, longest_wall);
    if (!r.verdict->advice.empty()) {
      h += "<h4>Advice</h4><ul class=\"advice\">\n";
      for (const auto& a : r.verdict->advice) h += "<li>" + html_escape(a) + "</li>\n";
      h += "</ul>\n";
    } else {
      h += r.verdict->input_bound == "not" ? "<p class=\"note\">No advice: the input pipeline kept up.</p>\n"
                                            : "<p class=\"note\">The report gives no advice.</p>\n";
    }
  } else {
    h += "<p class=\"note\">This report has no <code>train.verdict</code> (written by an older ramjet).</p>\n";
  }
  h += "</div><div>\n<h4>Input pipeline (data.train)</h4>\n";
  h += r.pipeline ? pipeline_table(*r.pipeline) : "<p class=\"note\">The report has no <code>data.train</code>.</p>\n";
  if (r.exported) h += export_table(*r.exported);
  if (r.distributed) h += strategy_table(*r.distributed, r.replicas);
  h += "</div></div>\n</article>\n";
  return h;
}

// Runs of one model, seed and data that differ only in how fast they ran (the pipeline's settings, say) train
// identically: their curves lie on top of each other, which the page says rather than leave a reader to wonder.
bool trained_identically(const std::vector<LabelledRun>& runs) {
  if (runs.size() < 2) return false;
  const auto& first = runs.front().run.history;
  for (const auto& r : runs) {
    const auto& h = r.run.history;
    if (h.size() != first.size() || h.empty()) return false;
    for (size_t i = 0; i < h.size(); ++i) {
      if (h[i].loss.has_value() != first[i].loss.has_value()) return false;
      if (h[i].loss && std::fabs(*h[i].loss - *first[i].loss) > 1e-6 * std::max(1.0, std::fabs(*first[i].loss)))
        return false;
    }
  }
  return true;
}

std::string default_title(const std::vector<LabelledRun>& runs) {
  std::set<std::string> manifests;
  for (const auto& r : runs) manifests.insert(r.run.manifest);
  if (manifests.size() == 1 && !runs.front().run.manifest.empty())
    return runs.size() == 1 ? "ramjet run: " + runs.front().run.manifest
                            : "ramjet: " + std::to_string(runs.size()) + " runs of " + runs.front().run.manifest;
  return "ramjet: " + std::to_string(runs.size()) + (runs.size() == 1 ? " run" : " runs");
}

}  // namespace

const char* run_color(size_t index) { return kPalette[index % std::size(kPalette)]; }

std::vector<LabelledRun> read_labelled_runs(const std::vector<std::filesystem::path>& files,
                                            const std::vector<std::string>& labels) {
  if (!labels.empty() && labels.size() != files.size())
    throw InvalidInput("--label: " + std::to_string(labels.size()) + " labels for " + std::to_string(files.size()) +
                       " reports; give one per report, in the same order, or none");
  std::vector<LabelledRun> runs;
  for (size_t i = 0; i < files.size(); ++i)
    runs.push_back({labels.empty() ? files[i].stem().string() : labels[i], read_run_report(files[i])});
  return runs;
}

std::string render_report_page(const std::vector<LabelledRun>& runs, const std::string& title) {
  if (runs.empty()) throw InvalidInput("no run reports to show");
  const std::string page_title = title.empty() ? default_title(runs) : title;
  double longest_wall = 0;
  for (const auto& r : runs)
    if (r.run.verdict) longest_wall = std::max(longest_wall, r.run.verdict->breakdown.wall_s);

  std::string h = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" +
                  html_escape(page_title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n<main>\n";
  h += "<header><h1>" + html_escape(page_title) + "</h1><p class=\"subtitle\">" + std::to_string(runs.size()) +
       (runs.size() == 1 ? " training run" : " training runs, speed-ups against the first") +
       " · written by <code>ramjet report</code> from the JSON reports of <code>ramjet run --report</code></p></header>\n";
  h += "<section id=\"summary\"><h2>Summary</h2>\n" + summary_table(runs) + "</section>\n";
  h += "<section id=\"curves\"><h2>Training curves</h2>\n<div class=\"charts\">\n";
  for (const auto& chart : history_charts(runs)) h += "<div class=\"card\">" + render_line_chart(chart) + "</div>\n";
  h += "</div>\n<p class=\"note\">Solid lines: training (mean over the epoch); dashed: validation on "
       "<code>data.eval</code> after each epoch. Hover a point for its value.";
  if (trained_identically(runs))
    h += " The runs trained identically (the same loss every epoch): their loss and accuracy curves lie on top of "
         "each other, the first run's line widest, and only their speed differs.";
  h += "</p>\n</section>\n";
  h += "<section id=\"runs\"><h2>Runs</h2>\n<p class=\"note\">Each bar is the training loop's wall time on one scale "
       "for all runs: waiting for input, forward/backward/update, all-reduce, and the rest (evaluation, "
       "checkpoints). Input-bound: TensorFlow Profiler's thresholds, 5 % and 20 % of the time spent waiting.</p>\n"
       "<div class=\"runs\">\n";
  for (size_t i = 0; i < runs.size(); ++i) h += run_card(runs[i], i, longest_wall);
  h += "</div>\n</section>\n<footer>ramjet report · self-contained: no scripts, no network.</footer>\n</main>\n</body>\n</html>\n";
  return h;
}

}  // namespace ramjet::core
