// `ramjet report`: run reports read back strictly (refusals name the file and the JSON pointer), the page's
// content (one SVG series per run per curve, speed-ups from samples/s, escaped strings, nothing fetched), and the
// page as a browser sees it: headless Chromium renders a report of two real training runs with no console message
// and the expected number of series in its DOM.
#include "ramjet/plugin/failure.hpp"
#include "ramjet/report/html_text.hpp"
#include "ramjet/report/report_page.hpp"
#include "ramjet/report/svg_plot.hpp"
#include "small_run.hpp"

#include <gtest/gtest.h>

#include <regex>
#include <sstream>

using namespace ramjet::core;
using namespace ramjet::test;

namespace {

nlohmann::json epoch(int e, double loss, double lr, double speed) {
  return {{"epoch", e}, {"loss", loss}, {"lr", lr}, {"samples_per_s", speed}, {"wall_s", 1.0}, {"elapsed_s", e * 1.0}};
}

// A report as `ramjet run --report` writes it: with eval data (val_* and eval), accuracy, verdict and pipeline.
nlohmann::json full_report(double samples_per_s) {
  nlohmann::json history = nlohmann::json::array();
  for (int e = 1; e <= 3; ++e) {
    auto h = epoch(e, 1.0 / e, 0.01 * e, samples_per_s * (1 + 0.01 * e));
    h["accuracy"] = 0.5 + 0.1 * e;
    h["val_loss"] = 1.2 / e;
    h["val_accuracy"] = 0.45 + 0.1 * e;
    history.push_back(h);
  }
  return {{"manifest", "examples/fashion_mnist/fast.json"},
          {"train",
           {{"precision", "float32"},
            {"replicas", 1},
            {"strategy", "single"},
            {"backend", "cpu"},
            {"wall_s", 12.5},
            {"samples_per_s", samples_per_s},
            {"final_loss", 1.0 / 3},
            {"final_accuracy", 0.8},
            {"history", history},
            {"verdict",
             {{"input_bound", "moderately"},
              {"input_wait_fraction", 0.12},
              {"advice", {"data.train.parallelism is 1: set it to \"auto\" <now>"}},
              {"breakdown",
               {{"wall_s", 12.5}, {"input_wait_s", 1.5}, {"compute_s", 10.0}, {"communication_s", 0.0}, {"other_s", 1.0}}}}}}},
          {"eval", {{"loss", 0.4}, {"accuracy", 0.75}}},
          {"data",
           {{"train",
             {{"parallelism", 2},
              {"prefetch", 3},
              {"deterministic", true},
              {"input_wait_s", 1.5},
              {"autotune",
               {{"tuned", {{"parallelism", true}, {"prefetch", true}}},
                {"limits", {{"parallelism", 2}, {"prefetch", 16}}},
                {"decisions", {{{"after_batches", 8}, {"knob", "prefetch"}, {"value", 3}, {"why", "jitter"}}}}}},
              {"cache", {{"kind", "memory"}, {"complete", true}, {"elements", 512}}}}}}}};
}

// Without eval data and labels: no val_*, no accuracy, no eval, and no verdict (an older report).
nlohmann::json bare_report(double samples_per_s) {
  nlohmann::json history = {epoch(1, 2.0, 0.1, samples_per_s), epoch(2, 1.5, 0.05, samples_per_s)};
  return {{"manifest", "m.json"}, {"train", {{"wall_s", 4.0}, {"samples_per_s", samples_per_s}, {"history", history}}}};
}

std::string refusal(const nlohmann::json& report) {
  try {
    run_report_from_json(report, "r.json");
  } catch (const InvalidInput& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST(ReportPage, OneSeriesPerRunPerCurveAndSpeedUpsFromSamplesPerSecond) {
  const std::vector<LabelledRun> runs = {{"fp32", run_report_from_json(full_report(100.0), "a.json")},
                                         {"cached", run_report_from_json(bare_report(250.0), "b.json")}};
  const std::string page = render_report_page(runs);
  // The full run: loss and accuracy, each training and validation, learning rate, samples/s = 6 series. The bare
  // run: training loss, learning rate, samples/s = 3.
  EXPECT_EQ(count_occurrences(page, "class=\"series\""), 9u);
  for (const char* key : {"loss/training/0", "loss/validation/0", "accuracy/training/0", "accuracy/validation/0",
                          "lr/0", "samples_per_s/0", "loss/training/1", "lr/1", "samples_per_s/1"})
    EXPECT_EQ(count_occurrences(page, std::string("data-series=\"") + key + "\""), 1u) << key;
  EXPECT_EQ(count_occurrences(page, "data-series=\"loss/validation/1\""), 0u) << "no eval data, no validation curve";
  // The table: one row per run, the baseline first, the second 250/100 = 2.50 times as fast.
  EXPECT_EQ(count_occurrences(page, "<tr class=\"run-row\">"), 2u);
  EXPECT_NE(page.find("1.00×<br><span class=\"meta\">(baseline)</span>"), std::string::npos);
  EXPECT_NE(page.find(">2.50×<"), std::string::npos);
  EXPECT_LT(page.find("id=\"summary\""), page.find("id=\"curves\"")) << "the summary comes first";
  // The step-time breakdown of the run that has a verdict: its non-zero parts, one segment each.
  EXPECT_EQ(count_occurrences(page, "class=\"segment\""), 3u);
  EXPECT_NE(page.find("moderately input-bound"), std::string::npos);
  EXPECT_NE(page.find("0.75"), std::string::npos) << "test accuracy";
  EXPECT_EQ(page.find("trained identically"), std::string::npos) << "their losses differ";
  const std::string twins = render_report_page({runs[0], {"again", runs[0].run}});
  EXPECT_NE(twins.find("trained identically"), std::string::npos);
}

TEST(ReportPage, ARegressionsMetricsGetAChartEach) {
  nlohmann::json regression = full_report(300.0);
  for (auto& h : regression["train"]["history"]) {
    h.erase("accuracy");
    h.erase("val_accuracy");
    h["val_psnr"] = 20.0 + h["epoch"].get<int>();
    h["val_mae"] = 0.1 / h["epoch"].get<int>();
  }
  const RunReport read = run_report_from_json(regression, "regression.json");
  ASSERT_EQ(read.history.size(), 3u);
  EXPECT_EQ(read.history[2].val_metrics.at("psnr"), 23.0);
  EXPECT_FALSE(read.history[2].val_accuracy.has_value());
  const std::string page = render_report_page({{"unet", read}, {"classifier", run_report_from_json(full_report(250.0), "c.json")}});
  for (const char* key : {"psnr/validation/0", "mae/validation/0"})
    EXPECT_EQ(count_occurrences(page, std::string("data-series=\"") + key + "\""), 1u) << key;
  EXPECT_NE(page.find("Validation psnr"), std::string::npos);
  EXPECT_EQ(count_occurrences(page, "data-series=\"psnr/validation/1\""), 0u) << "the classifier has no PSNR: no curve";
}

TEST(ReportPage, ARunOfSeveralRanksShowsItsBucketsAndWhatBackwardHid) {
  nlohmann::json two = full_report(400.0);
  two["train"]["replicas"] = 2;
  two["train"]["strategy"] = {{"name", "gloo"}, {"world_size", 2}, {"samples_per_s", 400.0},
                              {"samples_per_s_per_rank", 200.0}, {"bucket_mb", 25}, {"buckets", 3},
                              {"bucket_bytes", 46200000}, {"flat_buckets", 3}, {"overlapped", true},
                              {"all_reduce_s_per_step", 0.004}, {"unhidden_all_reduce_s_per_step", 0.016},
                              {"hidden_fraction", 0.75}};
  const RunReport read = run_report_from_json(two, "two.json");
  EXPECT_EQ(read.strategy, "gloo");
  ASSERT_TRUE(read.distributed.has_value());
  EXPECT_EQ(read.distributed->buckets, 3);
  const std::string page = render_report_page({{"two ranks", read}, {"one", run_report_from_json(full_report(250.0), "one.json")}});
  EXPECT_EQ(count_occurrences(page, "Gradient all-reduce (train.strategy)"), 1u) << "only the run of two ranks has one";
  EXPECT_NE(page.find("<td>buckets</td><td>3 (46.2 MB of gradients)</td>"), std::string::npos);
  two["train"]["strategy"]["split_gradients"] = 1;  // a gradient over 16 MiB, all-reduced in row pieces
  const std::string pieces = render_report_page({{"two ranks", run_report_from_json(two, "two.json")}});
  EXPECT_NE(pieces.find("<td>buckets</td><td>3 (46.2 MB of gradients, 1 gradient sent in row pieces)</td>"),
            std::string::npos);
  EXPECT_NE(page.find("<td>hidden behind backward</td><td>75"), std::string::npos);
  EXPECT_NE(page.find("2 replicas · gloo"), std::string::npos);
  // A report from before the buckets named the strategy with a bare string: still read.
  EXPECT_EQ(run_report_from_json(full_report(1.0), "old.json").strategy, "single");
  EXPECT_FALSE(run_report_from_json(full_report(1.0), "old.json").distributed.has_value());
}

TEST(ReportPage, EveryStringFromAFileIsEscaped) {
  nlohmann::json hostile = full_report(100.0);
  hostile["manifest"] = "<script>alert('m')</script>&\".json";
  hostile["train"]["precision"] = "<img src=x onerror=alert(1)>";
  hostile["data"]["train"]["autotune"]["decisions"][0]["why"] = "</table><b>";
  const std::string page = render_report_page({{"<i>label</i>", run_report_from_json(hostile, "<evil>.json")}});
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(page.find("<img"), std::string::npos);
  EXPECT_EQ(page.find("<i>label"), std::string::npos);
  EXPECT_EQ(page.find("</table><b>"), std::string::npos);
  EXPECT_NE(page.find("&lt;script&gt;alert(&#39;m&#39;)&lt;/script&gt;&amp;&quot;.json"), std::string::npos);
  EXPECT_NE(page.find("&lt;i&gt;label&lt;/i&gt;"), std::string::npos);
  EXPECT_NE(page.find("set it to &quot;auto&quot; &lt;now&gt;"), std::string::npos) << "advice";
  EXPECT_EQ(html_escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
}

TEST(ReportPage, FetchesNothingAtViewTime) {
  const std::string page = render_report_page({{"a", run_report_from_json(full_report(10.0), "a.json")}});
  for (const char* outside : {"http://", "https://", "<script", "<link", "src=", "url(", "@import"})
    EXPECT_EQ(page.find(outside), std::string::npos) << outside;
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("<meta charset=\"utf-8\">"), std::string::npos);
}

TEST(ReportPage, ChartsWithoutValuesSaySoAndFlatCurvesStillDraw) {
  nlohmann::json one_epoch = bare_report(50.0);
  one_epoch["train"]["history"] = {epoch(1, 0.7, 0.001, 50.0)};
  const std::string page = render_report_page({{"a", run_report_from_json(one_epoch, "a.json")}});
  EXPECT_EQ(count_occurrences(page, "class=\"series\""), 3u);
  EXPECT_EQ(count_occurrences(page, "not measured in these runs"), 1u) << "accuracy: no run measured it";
  EXPECT_EQ(page.find("NaN"), std::string::npos);
  EXPECT_EQ(page.find("inf\""), std::string::npos);
}

TEST(ReportPage, TicksAndNumbersAreRound) {
  EXPECT_EQ(nice_ticks(0, 1, 5), (std::vector<double>{0, 0.2, 0.4, 0.6000000000000001, 0.8, 1}));
  const auto ticks = nice_ticks(0.31, 0.97, 5);
  EXPECT_DOUBLE_EQ(ticks.front(), 0.3);
  EXPECT_DOUBLE_EQ(ticks.back(), 1.0);
  EXPECT_EQ(format_number(144.60835), "144.6");
  EXPECT_EQ(format_number(0.71500), "0.715");
  EXPECT_EQ(format_number(2.5e-5), "2.5e-05");
  EXPECT_EQ(format_number(12345.6), "12346");
  EXPECT_EQ(format_seconds(41.49), "41.5 s");
  EXPECT_EQ(format_seconds(123), "2 min 3 s");
  EXPECT_EQ(format_percent(0.0421), "4.2 %");
}

TEST(RunReportReader, RefusalsNameTheFileAndThePointer) {
  const std::string pipeline_report = refusal({{"manifest", "m.json"}, {"pipelines", nlohmann::json::object()}});
  EXPECT_NE(pipeline_report.find("r.json#/train: missing: not the report of a training run"), std::string::npos)
      << pipeline_report;
  nlohmann::json no_history = full_report(1);
  no_history["train"].erase("history");
  EXPECT_EQ(refusal(no_history), "r.json#/train/history: missing");
  nlohmann::json bad_loss = full_report(1);
  bad_loss["train"]["history"][1]["loss"] = "low";
  EXPECT_EQ(refusal(bad_loss), "r.json#/train/history/1/loss: must be a number, got \"low\"");
  nlohmann::json bad_epoch = full_report(1);
  bad_epoch["train"]["history"][0]["epoch"] = 1.5;
  EXPECT_EQ(refusal(bad_epoch), "r.json#/train/history/0/epoch: must be an integer, got 1.5");
  nlohmann::json bad_bound = full_report(1);
  bad_bound["train"]["verdict"]["input_bound"] = "very";
  EXPECT_NE(refusal(bad_bound).find("r.json#/train/verdict/input_bound: must be \"not\""), std::string::npos);
  nlohmann::json bad_advice = full_report(1);
  bad_advice["train"]["verdict"]["advice"][0] = 7;
  EXPECT_EQ(refusal(bad_advice), "r.json#/train/verdict/advice/0: must be a string, got 7");
  EXPECT_EQ(refusal(nlohmann::json::array()), "r.json#: must be a JSON object (the report `ramjet run MANIFEST "
                                              "--report FILE` writes)");
  // A diverged loss is written as null: no point, no refusal.
  nlohmann::json diverged = full_report(1);
  diverged["train"]["history"][2]["loss"] = nullptr;
  EXPECT_FALSE(run_report_from_json(diverged, "r.json").history[2].loss.has_value());
}

// Every value of a real-shaped report replaced, one at a time, by each kind of JSON value (extremes included): the
// reader accepts it or refuses it with InvalidInput naming the place, and whatever it accepts renders into a page
// with no "nan" or "inf" in its coordinates. Nothing else may come out (a crash, another exception).
TEST(RunReportReader, AnyValueAnywhereIsAcceptedOrRefusedCleanly) {
  const nlohmann::json base = full_report(100.0);
  const nlohmann::json replacements = {nullptr, true, "text", -1, 0, 1e308, -1e308, 9223372036854775807LL,
                                       18446744073709551615ULL, 1.5, nlohmann::json::array(), nlohmann::json::object()};
  int accepted = 0, refused = 0;
  const nlohmann::json leaves = base.flatten();  // {"/train/wall_s": 12.5, ...}
  for (auto leaf = leaves.begin(); leaf != leaves.end(); ++leaf) {
    const std::string& pointer = leaf.key();
    for (const auto& replacement : replacements) {
      nlohmann::json hostile = base;
      hostile[nlohmann::json::json_pointer(pointer)] = replacement;
      try {
        const RunReport r = run_report_from_json(hostile, "h.json");
        const std::string page = render_report_page({{"a", r}, {"b", run_report_from_json(base, "b.json")}});
        ++accepted;
        EXPECT_EQ(page.find("=\"nan"), std::string::npos) << pointer << " = " << replacement.dump();
        EXPECT_EQ(page.find("=\"inf"), std::string::npos) << pointer << " = " << replacement.dump();
        EXPECT_EQ(page.find("=\"-nan"), std::string::npos) << pointer << " = " << replacement.dump();
      } catch (const InvalidInput& e) {
        ++refused;
        EXPECT_EQ(std::string(e.what()).rfind("h.json#/", 0), 0u) << e.what();
      }
    }
  }
  EXPECT_GT(accepted, 50);
  EXPECT_GT(refused, 50);
}

TEST(RunReportReader, FilesAndLabels) {
  TempDir dir;
  write_file(dir / "fp32.json", full_report(10).dump());
  write_file(dir / "broken.json", "{\"train\": {\"history\": [}");
  const auto runs = read_labelled_runs({dir / "fp32.json"}, {});
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].label, "fp32") << "the file's name without its extension";
  EXPECT_EQ(read_labelled_runs({dir / "fp32.json"}, {"baseline"})[0].label, "baseline");
  try {
    read_labelled_runs({dir / "fp32.json", dir / "fp32.json"}, {"one"});
    ADD_FAILURE() << "one label for two reports was accepted";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("--label: 1 labels for 2 reports"), std::string::npos) << e.what();
  }
  try {
    read_labelled_runs({dir / "broken.json"}, {});
    ADD_FAILURE() << "malformed JSON was accepted";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("broken.json: not valid JSON at byte 24"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_labelled_runs({dir / "absent.json"}, {}), InvalidInput);
}

namespace {

// A softmax regression on 512 Fashion-MNIST images for 3 epochs, evaluated on 256 after each: what differs
// between the two runs is the pipeline (serial and uncached, or parallel and cached), as in a staircase report.
nlohmann::json short_run(bool fast_pipeline) {
  auto m = small_run_manifest({.seed = 5, .train_take = 512, .eval_take = 256, .eval_batch = 128, .epochs = 3});
  m["train"]["schedule"] = {{"type", "cosine"}};
  if (fast_pipeline) m["data"]["train"]["cache"] = "memory";
  else m["data"]["train"]["parallelism"] = 1;
  return m;
}

struct Browser {
  int exit_code = -1;
  std::string dom;                    // --dump-dom: the document after parsing, as the page shows it
  std::vector<std::string> console;   // every console message (Chromium logs them as lines with "CONSOLE")
  std::string log;
};

bool have_chromium() { return run("command -v chromium").exit_code == 0; }

// Headless Chromium on a local file, bounded in time; console messages come from its log on stderr. A page without
// scripts logs none, so any message at all (a script error, a resource that failed to load) is a fault.
Browser open_in_chromium(const fs::path& page, const fs::path& scratch) {
  const fs::path dom = scratch / "dom.html", log = scratch / "chromium.log";
  // Grouped, so the redirections hold against the 2>&1 that run() appends.
  const CommandResult r = run("{ timeout -k 5 90 chromium --headless=new --no-sandbox --disable-gpu --no-first-run "
                              "--user-data-dir=" + quote((scratch / "profile").string()) +
                              " --enable-logging=stderr --v=0 --dump-dom " + quote("file://" + page.string()) + " >" +
                              quote(dom.string()) + " 2>" + quote(log.string()) + "; }");
  Browser b;
  b.exit_code = r.exit_code;
  b.dom = read_file(dom);
  b.log = read_file(log);
  std::istringstream lines(b.log);
  for (std::string line; std::getline(lines, line);)
    if (line.find(":CONSOLE") != std::string::npos) b.console.push_back(line);
  return b;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

}  // namespace

TEST(ReportChromium, TheConsoleCheckCatchesAScriptError) {
  if (!have_chromium()) GTEST_SKIP() << "chromium is not installed (Debian's `chromium`; ./dev deps installs it)";
  TempDir dir;
  write_file(dir / "broken.html", "<!DOCTYPE html><html><body><p>x</p><script>console.error('deliberate error');"
                                  "null.deliberate();</script></body></html>");
  const Browser b = open_in_chromium(dir / "broken.html", dir.path());
  ASSERT_EQ(b.exit_code, 0) << b.log;
  EXPECT_NE(joined(b.console).find("deliberate error"), std::string::npos) << b.log;
  EXPECT_NE(joined(b.console).find("Uncaught TypeError"), std::string::npos) << b.log;
}

TEST(ReportChromium, AReportOfTwoRealRunsRendersWithEveryCurveAndTheComparison) {
  if (!have_chromium()) GTEST_SKIP() << "chromium is not installed (Debian's `chromium`; ./dev deps installs it)";
  TempDir dir;
  for (const bool fast : {false, true}) {
    const std::string name = fast ? "cached" : "serial";
    write_file(dir / (name + ".manifest.json"), short_run(fast).dump());
    const auto r = host_with_fixtures("run -q " + quote((dir / (name + ".manifest.json")).string()) + " --report " +
                        quote((dir / (name + ".json")).string()));
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  const auto r = host_with_fixtures("report " + quote((dir / "serial.json").string()) + " " + quote((dir / "cached.json").string()) +
                      " -o " + quote((dir / "out/report.html").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("report.html: 2 runs"), std::string::npos) << r.output;

  const Browser b = open_in_chromium(dir / "out/report.html", dir.path());
  ASSERT_EQ(b.exit_code, 0) << b.log;
  EXPECT_TRUE(b.console.empty()) << "console messages:\n" << joined(b.console);
  // Two runs with eval data and labels: loss and accuracy (training and validation), learning rate, samples/s.
  const std::regex series(R"(<polyline class="series")");
  const auto found = std::distance(std::sregex_iterator(b.dom.begin(), b.dom.end(), series), std::sregex_iterator());
  EXPECT_EQ(found, 2 * 6) << b.dom.substr(0, 2000);
  EXPECT_EQ(count_occurrences(b.dom, "<tr class=\"run-row\">"), 2u);
  EXPECT_NE(b.dom.find("(baseline)"), std::string::npos);
  EXPECT_TRUE(std::regex_search(b.dom, std::regex(R"(class="num speedup">\d+\.\d\d×<)"))) << "the second run's speed-up";
  EXPECT_GE(count_occurrences(b.dom, "class=\"segment\""), 2u) << "step-time breakdown bars";
  EXPECT_NE(b.dom.find(">serial<"), std::string::npos) << "runs are named after their report files";
}

TEST(ReportCli, BadInputExitsTwoNamingTheFileAndThePlace) {
  TempDir dir;
  write_file(dir / "pipeline.json", R"({"manifest": "m.json", "pipelines": {}})");
  write_file(dir / "broken.json", "{\"train\": ");
  write_file(dir / "run.json", full_report(10).dump());
  auto r = host_with_fixtures("report " + quote((dir / "pipeline.json").string()) + " -o " + quote((dir / "r.html").string()));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("pipeline.json#/train: missing"), std::string::npos) << r.output;
  r = host_with_fixtures("report " + quote((dir / "broken.json").string()) + " -o " + quote((dir / "r.html").string()));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("broken.json: not valid JSON at byte"), std::string::npos) << r.output;
  r = host_with_fixtures("report " + quote((dir / "run.json").string()));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("missing --output"), std::string::npos) << r.output;
  r = host_with_fixtures("report -o " + quote((dir / "r.html").string()));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = host_with_fixtures("report " + quote((dir / "run.json").string()) + " -o " + quote((dir / "run.json").string()));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(read_file(dir / "run.json").find("\"train\""), std::string::npos) << "the report must survive";
  write_file(dir / "a_file", "x");
  r = host_with_fixtures("report " + quote((dir / "run.json").string()) + " -o " + quote((dir / "a_file/r.html").string()));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--output"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "r.html")) << "no page from bad input";
  r = host_with_fixtures("report " + quote((dir / "run.json").string()) + " -o " + quote((dir / "r.html").string()) +
           " --label one --label two");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--label: 2 labels for 1 reports"), std::string::npos) << r.output;
  r = host_with_fixtures("report " + quote((dir / "run.json").string()) + " -o " + quote((dir / "r.html").string()) +
           " --label 'tuned <fast>' --title 'Staircase'");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const std::string page = read_file(dir / "r.html");
  EXPECT_NE(page.find("<h1>Staircase</h1>"), std::string::npos);
  EXPECT_NE(page.find("tuned &lt;fast&gt;"), std::string::npos);
}
