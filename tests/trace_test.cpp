// `ramjet run --trace FILE` from a real training run: the file is a Chrome trace (chrome://tracing, Perfetto)
// with the phases, timestamps, thread names and process track the format needs, the main thread's spans cover
// the run, and an unwritable destination is refused before any work.
#include "ramjet/plugin/trace.hpp"
#include "small_run.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <thread>

using namespace ramjet::test;

namespace {

// Two epochs with evaluation and checkpoints: every kind of span the trainer records.
nlohmann::json traced_manifest(const fs::path& checkpoints) {
  auto m = small_run_manifest({.train_take = 1024, .eval_take = 256, .eval_batch = 128});
  m["train"]["checkpoint"] = {{"dir", checkpoints.string()}, {"every_steps", 16}};
  return m;
}

struct Interval {
  double begin, end;
};

// The length of the union of `spans` that lies inside [lo, hi].
double covered(std::vector<Interval> spans, double lo, double hi) {
  std::sort(spans.begin(), spans.end(), [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  double total = 0, reach = lo;
  for (const auto& s : spans) {
    const double b = std::max(s.begin, reach), e = std::min(s.end, hi);
    if (e > b) total += e - b;
    reach = std::max(reach, e);
  }
  return total;
}

}  // namespace

TEST(Trace, ARealRunWritesAChromeTraceThatCoversIt) {
  TempDir dir;
  write_file(dir / "m.json", traced_manifest(dir / "checkpoints").dump());
  auto r = host_with_fixtures("run " + quote((dir / "m.json").string()) + " --trace " + quote((dir / "out/run.trace.json").string()) +
                " --report " + quote((dir / "report.json").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto trace = nlohmann::json::parse(read_file(dir / "out/run.trace.json"));
  const auto report = nlohmann::json::parse(read_file(dir / "report.json"));
  ASSERT_EQ(trace["displayTimeUnit"], "ms");
  ASSERT_TRUE(trace["traceEvents"].is_array());

  std::map<int64_t, std::string> thread_names;
  std::map<std::string, int64_t> process_names;
  std::map<int64_t, std::vector<Interval>> spans_by_tid;
  std::map<int64_t, std::vector<std::pair<std::string, double>>> open_by_tid;  // B/E: a stack per thread
  std::map<int64_t, double> last_be_ts;
  std::multiset<std::string> names;
  double first = 1e300, last = -1e300;
  for (const auto& e : trace["traceEvents"]) {
    for (const char* key : {"ph", "ts", "pid", "tid"}) ASSERT_TRUE(e.contains(key)) << key << " missing in " << e.dump();
    ASSERT_TRUE(e["ts"].is_number()) << e.dump();
    EXPECT_EQ(e["pid"], 0) << "one rank today: pid 0";
    const std::string ph = e["ph"];
    const int64_t tid = e["tid"];
    const double ts = e["ts"];
    if (ph == "M") {
      if (e["name"] == "thread_name") thread_names[tid] = e["args"]["name"];
      if (e["name"] == "process_name") process_names[e["args"]["name"]] = e["pid"];
      continue;
    }
    ASSERT_TRUE(e.contains("name") && e["name"].is_string()) << e.dump();
    names.insert(e["name"].get<std::string>());
    if (ph == "X") {
      ASSERT_TRUE(e.contains("dur") && e["dur"].is_number()) << e.dump();
      const double dur = e["dur"];
      EXPECT_GE(dur, 0) << e.dump();
      spans_by_tid[tid].push_back({ts, ts + dur});
      first = std::min(first, ts), last = std::max(last, ts + dur);
    } else if (ph == "B" || ph == "E") {
      EXPECT_GE(ts, last_be_ts[tid]) << "B/E timestamps go back in time on tid " << tid;
      last_be_ts[tid] = ts;
      auto& stack = open_by_tid[tid];
      if (ph == "B") {
        stack.emplace_back(e["name"], ts);
      } else {
        ASSERT_FALSE(stack.empty()) << "E without B: " << e.dump();
        spans_by_tid[tid].push_back({stack.back().second, ts});
        first = std::min(first, stack.back().second), last = std::max(last, ts);
        stack.pop_back();
      }
    } else {
      ADD_FAILURE() << "unexpected phase " << ph;
    }
  }
  for (const auto& [tid, stack] : open_by_tid) EXPECT_TRUE(stack.empty()) << "unbalanced B/E on tid " << tid;
  EXPECT_EQ(process_names.count("rank 0"), 1u);
  for (const auto& [tid, spans] : spans_by_tid)
    EXPECT_TRUE(thread_names.count(tid)) << "tid " << tid << " has events but no thread_name";

  // The spans the issue names, each from where it happens.
  for (const char* name : {"setup", "compile", "input wait", "forward", "backward", "optimizer update", "evaluate",
                           "checkpoint", "map chunk", "batch assembly"})
    EXPECT_GT(names.count(name), 0u) << "no '" << name << "' span";
  EXPECT_EQ(names.count("optimizer update"), static_cast<size_t>(report["train"]["steps"].get<int64_t>()));
  std::set<std::string> thread_kinds;
  for (const auto& [tid, name] : thread_names) thread_kinds.insert(name.substr(0, name.find_last_not_of("0123456789 ") + 1));
  EXPECT_TRUE(thread_kinds.count("main")) << "the training thread is named main";
  EXPECT_TRUE(thread_kinds.count("pipeline worker")) << "the map's threads have their own tracks";

  // The main thread's spans cover the run: from the first event of any thread to the last.
  int64_t main_tid = -1;
  for (const auto& [tid, name] : thread_names)
    if (name == "main") main_tid = tid;
  ASSERT_GE(main_tid, 0);
  ASSERT_LT(first, last);
  const double coverage = covered(spans_by_tid[main_tid], first, last) / (last - first);
  EXPECT_GE(coverage, 0.95) << "the main thread's spans cover " << 100 * coverage << "% of the run";
  // ... and the run is the training the report timed (its wall_s is the training loop, in seconds).
  EXPECT_GE((last - first) * 1e-6, report["train"]["wall_s"].get<double>());
}

TEST(Trace, AnUnwritableDestinationExitsTwoBeforeAnyWork) {
  TempDir dir;
  write_file(dir / "m.json", traced_manifest(dir / "checkpoints").dump());
  write_file(dir / "file", "x");
  // A folder, and a path under a regular file: neither can be written. The message names what is in the way.
  for (const auto& [bad, named] : {std::pair{dir.path(), dir.path()}, std::pair{dir / "file" / "trace.json", dir / "file"}}) {
    auto r = host_with_fixtures("run " + quote((dir / "m.json").string()) + " --trace " + quote(bad.string()));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("--trace"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(named.string()), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("Epoch"), std::string::npos) << "refused before any training:\n" << r.output;
    EXPECT_FALSE(fs::exists(dir / "checkpoints")) << "no training step ran";
  }
  auto e = host_with_fixtures("eval " + quote((dir / "m.json").string()) + " --trace " + quote(dir.path().string()));
  EXPECT_EQ(e.exit_code, 2) << e.output;
  EXPECT_NE(e.output.find("--trace"), std::string::npos) << e.output;
}

// The recorder itself: spans from several threads, each on its own named track, nested spans in order, and a
// recording that is off records nothing.
TEST(Trace, RecorderKeepsEveryThreadsSpansAndNothingWhenOff) {
  { ramjet::core::TraceSpan before("never recorded"); }
  ramjet::core::Trace::start(3, "rank 3", "tester");
  {
    ramjet::core::TraceSpan outer("outer", "n", 5);
    ramjet::core::TraceSpan inner("inner");
  }
  std::thread worker([] {
    ramjet::core::Trace::name_thread("helper", 2);
    ramjet::core::TraceSpan span("from the worker");
  });
  worker.join();  // its buffer outlives it
  const auto trace = nlohmann::json::parse(ramjet::core::Trace::finish());
  { ramjet::core::TraceSpan after("never recorded"); }
  std::map<std::string, nlohmann::json> by_name;
  std::map<int64_t, std::string> thread_names;
  for (const auto& e : trace["traceEvents"]) {
    EXPECT_EQ(e["pid"], 3);
    if (e["ph"] == "M" && e["name"] == "thread_name") thread_names[e["tid"]] = e["args"]["name"];
    if (e["ph"] == "M" && e["name"] == "process_name") {
      EXPECT_EQ(e["args"]["name"], "rank 3");
    }
    if (e["ph"] == "X") by_name[e["name"]] = e;
  }
  EXPECT_EQ(by_name.size(), 3u) << trace.dump(1);
  EXPECT_FALSE(by_name.count("never recorded"));
  EXPECT_EQ(by_name["outer"]["args"]["n"], 5);
  EXPECT_EQ(by_name["outer"]["tid"], by_name["inner"]["tid"]);
  EXPECT_LE(by_name["outer"]["ts"].get<double>(), by_name["inner"]["ts"].get<double>());
  EXPECT_GE(by_name["outer"]["dur"].get<double>(), by_name["inner"]["dur"].get<double>());
  EXPECT_EQ(thread_names[by_name["outer"]["tid"]], "tester");
  EXPECT_EQ(thread_names[by_name["from the worker"]["tid"]], "helper 2");
  // The next recording starts empty.
  ramjet::core::Trace::start(0, "rank 0");
  const auto empty = nlohmann::json::parse(ramjet::core::Trace::finish());
  for (const auto& e : empty["traceEvents"]) EXPECT_EQ(e["ph"], "M");
}
