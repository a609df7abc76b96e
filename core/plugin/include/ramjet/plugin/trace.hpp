// A Chrome trace-event recorder (the JSON that chrome://tracing and Perfetto open) for `--trace FILE`.
// Off, a span site costs one relaxed atomic load and a branch. On, each thread appends complete ("X") events to
// its own buffer without locks; the buffers are merged and written once, at the end.
// Span names and argument names must be string literals: only the pointer is kept.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ramjet::core {

class Trace {
 public:
  using Clock = std::chrono::steady_clock;

  static bool on() { return enabled_.load(std::memory_order_relaxed); }
  // Starts a recording (dropping any earlier one) whose events go to process `pid` named `process_name` (one
  // track per rank). The calling thread is named `thread_name`.
  static void start(int pid, const std::string& process_name, const char* thread_name = "main");
  // Stops recording and returns the trace as JSON text. Call once the traced work is over: threads that are
  // still appending would race with the merge.
  static std::string finish();
  // Renames the recording's process (a data-parallel rank learns its number only once its strategy exists).
  static void set_process(int pid, const std::string& process_name);
  // finish(), written atomically to `path`.
  static void finish_to(const std::filesystem::path& path);

  // Names the calling thread's track ("pipeline worker" + index); costs nothing and allocates nothing.
  static void name_thread(const char* name, int index = -1);
  // An event measured by the caller: for spans whose name is known only at their end.
  static void complete(const char* name, Clock::time_point start, Clock::time_point end,
                       const char* arg_name = nullptr, int64_t arg = 0);

 private:
  static std::atomic<bool> enabled_;
};

// One trace of a job's ranks: the events of each of `parts` (traces that other ranks' processes on this machine
// wrote, each on its own process track) appended to the trace at `into`, their timestamps moved onto its clock;
// `into` is rewritten atomically and the parts removed. Throws RuntimeFailure when a file is not such a trace.
void merge_rank_traces(const std::filesystem::path& into, const std::vector<std::filesystem::path>& parts);

// Records [construction, destruction) as one complete event on the calling thread, when tracing is on.
class TraceSpan {
 public:
  explicit TraceSpan(const char* name, const char* arg_name = nullptr, int64_t arg = 0)
      : name_(name), arg_name_(arg_name), arg_(arg), active_(Trace::on()) {
    if (active_) start_ = Trace::Clock::now();
  }
  ~TraceSpan() {
    if (active_) Trace::complete(name_, start_, Trace::Clock::now(), arg_name_, arg_);
  }
  TraceSpan(const TraceSpan&) = delete;
  TraceSpan& operator=(const TraceSpan&) = delete;
  void set_arg(const char* arg_name, int64_t arg) { arg_name_ = arg_name, arg_ = arg; }

 private:
  const char* name_;
  const char* arg_name_;
  int64_t arg_;
  bool active_;
  Trace::Clock::time_point start_{};
};

}  // namespace ramjet::core
