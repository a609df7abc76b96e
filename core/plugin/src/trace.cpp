#include "ramjet/plugin/trace.hpp"

#include "ramjet/plugin/atomic_file.hpp"
#include "ramjet/plugin/failure.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <vector>

namespace ramjet::core {

std::atomic<bool> Trace::enabled_{false};

namespace {

struct Event {
  const char* name;
  const char* arg_name;
  int64_t start_ns;
  int64_t dur_ns;
  int64_t arg;
};

struct ThreadBuffer {
  const char* name;
  int index;
  std::vector<Event> events;
};

// Buffers are owned here, not by their threads: a pipeline worker that ends before the trace is written keeps
// its events. The mutex guards registration only, once per thread and recording.
struct Recording {
  std::mutex mutex;
  std::vector<std::unique_ptr<ThreadBuffer>> buffers;
  Trace::Clock::time_point origin{};
  int pid = 0;
  std::string process_name;
};

Recording& recording() {
  static Recording r;
  return r;
}

// Each recording has its own generation, so a thread's cached buffer from an earlier recording is never used.
std::atomic<uint64_t> generation{0};
thread_local const char* t_name = nullptr;
thread_local int t_index = -1;
thread_local ThreadBuffer* t_buffer = nullptr;
thread_local uint64_t t_generation = 0;

constexpr size_t kInitialEvents = 4096;  // growth is amortised; this keeps the first steps from paying for it

ThreadBuffer& this_thread_buffer() {
  const uint64_t g = generation.load(std::memory_order_acquire);
  if (t_buffer != nullptr && t_generation == g) return *t_buffer;
  Recording& r = recording();
  std::lock_guard lock(r.mutex);
  auto buffer = std::make_unique<ThreadBuffer>(ThreadBuffer{t_name, t_index, {}});
  buffer->events.reserve(kInitialEvents);
  t_buffer = buffer.get();
  t_generation = g;
  r.buffers.push_back(std::move(buffer));
  return *t_buffer;
}

void append_us(std::string& out, int64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%" PRId64 ".%03d", ns / 1000, static_cast<int>(ns % 1000));
  out += text;
}

void append_metadata(std::string& out, const char* what, int pid, size_t tid, const std::string& name) {
  out += "{\"ph\":\"M\",\"name\":\"";
  out += what;
  out += "\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) + ",\"ts\":0,\"args\":{\"name\":";
  out += nlohmann::json(name).dump();
  out += "}},\n";
}

std::string thread_label(const ThreadBuffer& b, size_t tid) {
  if (b.name == nullptr) return "thread " + std::to_string(tid);
  return b.index < 0 ? std::string(b.name) : std::string(b.name) + " " + std::to_string(b.index);
}

}  // namespace

void Trace::start(int pid, const std::string& process_name, const char* thread_name) {
  Recording& r = recording();
  {
    std::lock_guard lock(r.mutex);
    r.buffers.clear();
    r.origin = Clock::now();
    r.pid = pid;
    r.process_name = process_name;
    generation.fetch_add(1, std::memory_order_acq_rel);
  }
  name_thread(thread_name);
  this_thread_buffer();  // the starting thread is the first track (tid 1)
  enabled_.store(true, std::memory_order_release);
}

void Trace::set_process(int pid, const std::string& process_name) {
  Recording& r = recording();
  std::lock_guard lock(r.mutex);
  r.pid = pid;
  r.process_name = process_name;
}

void Trace::name_thread(const char* name, int index) {
  t_name = name;
  t_index = index;
  if (t_buffer != nullptr && t_generation == generation.load(std::memory_order_acquire))
    t_buffer->name = name, t_buffer->index = index;
}

void Trace::complete(const char* name, Clock::time_point start, Clock::time_point end, const char* arg_name,
                     int64_t arg) {
  if (!on()) return;  // a span that outlived the recording
  const auto origin = recording().origin;
  const auto ns = [&](Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t - origin).count();
  };
  this_thread_buffer().events.push_back(Event{name, arg_name, ns(start), std::max<int64_t>(0, ns(end) - ns(start)), arg});
}

std::string Trace::finish() {
  enabled_.store(false, std::memory_order_release);
  Recording& r = recording();
  std::lock_guard lock(r.mutex);
  // Where this trace's zero lies on the machine's monotonic clock (steady_clock is CLOCK_MONOTONIC on Linux, one
  // clock for every process): merge_rank_traces lines the ranks' traces up with it.
  const int64_t origin_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(r.origin.time_since_epoch()).count();
  std::string out = "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"monotonic_origin_ns\":" +
                    std::to_string(origin_ns) + "},\"traceEvents\":[\n";
  append_metadata(out, "process_name", r.pid, 0, r.process_name);
  for (size_t i = 0; i < r.buffers.size(); ++i) {
    ThreadBuffer& b = *r.buffers[i];
    const size_t tid = i + 1;
    append_metadata(out, "thread_name", r.pid, tid, thread_label(b, tid));
    // Spans are appended as they end (children before parents); viewers read them in start order.
    std::stable_sort(b.events.begin(), b.events.end(), [](const Event& x, const Event& y) {
      return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : x.dur_ns > y.dur_ns;
    });
    const std::string ids = ",\"pid\":" + std::to_string(r.pid) + ",\"tid\":" + std::to_string(tid);
    for (const Event& e : b.events) {
      out += "{\"ph\":\"X\",\"name\":\"";
      out += e.name;
      out += "\"" + ids + ",\"ts\":";
      append_us(out, e.start_ns);
      out += ",\"dur\":";
      append_us(out, e.dur_ns);
      if (e.arg_name != nullptr) {
        out += ",\"args\":{\"";
        out += e.arg_name;
        out += "\":" + std::to_string(e.arg) + "}";
      }
      out += "},\n";
    }
  }
  out.resize(out.size() - 2);  // the last ",\n": the process name is always there
  out += "\n]}\n";
  r.buffers.clear();
  generation.fetch_add(1, std::memory_order_acq_rel);
  return out;
}

void Trace::finish_to(const std::filesystem::path& path) { write_file_atomically(path, finish()); }

void merge_rank_traces(const std::filesystem::path& into, const std::vector<std::filesystem::path>& parts) {
  auto read = [](const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array() ||
        !doc.contains("otherData") || !doc["otherData"].contains("monotonic_origin_ns") ||
        !doc["otherData"]["monotonic_origin_ns"].is_number_integer())
      throw RuntimeFailure(path.string() + ": not a trace that ramjet wrote (no traceEvents or monotonic_origin_ns)");
    return doc;
  };
  nlohmann::json merged = read(into);
  const int64_t origin = merged["otherData"]["monotonic_origin_ns"].get<int64_t>();
  for (const auto& part : parts) {
    const nlohmann::json doc = read(part);
    const double shift_us = static_cast<double>(doc["otherData"]["monotonic_origin_ns"].get<int64_t>() - origin) / 1000;
    for (nlohmann::json event : doc["traceEvents"]) {
      if (event.value("ph", "") != "M" && event.contains("ts") && event["ts"].is_number())
        event["ts"] = event["ts"].get<double>() + shift_us;
      merged["traceEvents"].push_back(std::move(event));
    }
  }
  write_file_atomically(into, merged.dump() + "\n");
  for (const auto& part : parts) std::filesystem::remove(part);
}

}  // namespace ramjet::core
