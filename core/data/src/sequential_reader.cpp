#include "ramjet/data/sequential_reader.hpp"

#include "ramjet/plugin/trace.hpp"

#include <exception>

namespace ramjet::core {
namespace {

class SourceReader final : public SequentialReader {
 public:
  explicit SourceReader(std::shared_ptr<DataSource> source)
      : source_(std::move(source)), count_(source_->random_access() ? source_->cardinality() : -1) {}
  void start_epoch(uint64_t epoch) override {
    next_ = 0;
    source_->reset(epoch);
  }
  bool next(Example& out) override {
    if (count_ >= 0) {
      if (next_ >= count_) return false;
      source_->get(next_++, out);
      return true;
    }
    return source_->next(out);
  }

 private:
  std::shared_ptr<DataSource> source_;
  int64_t count_;
  int64_t next_ = 0;
};

// A file being read, optionally ahead on its own thread into a small queue.
class OpenFile {
 public:
  OpenFile(std::unique_ptr<SequentialReader> reader, uint64_t epoch, bool ahead) : reader_(std::move(reader)) {
    reader_->start_epoch(epoch);
    if (ahead) thread_ = std::thread([this] { read_ahead(); });
  }
  ~OpenFile() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    space_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  // False at the end of the file; rethrows the reader's error in order.
  bool next(Example& out) {
    if (!thread_.joinable()) return reader_->next(out);
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] { return !queue_.empty() || done_; });
    if (queue_.empty()) {
      if (error_) std::rethrow_exception(error_);
      return false;
    }
    out = std::move(queue_.front());
    queue_.pop_front();
    space_.notify_one();
    return true;
  }

 private:
  static constexpr size_t kAhead = 16;
  void read_ahead() {
    Trace::name_thread("file reader");
    try {
      for (;;) {
        Example e;
        {
          TraceSpan span("source read");
          if (!reader_->next(e)) break;
        }
        std::unique_lock lock(mutex_);
        space_.wait(lock, [&] { return queue_.size() < kAhead || stop_; });
        if (stop_) return;
        queue_.push_back(std::move(e));
        ready_.notify_one();
      }
    } catch (...) {
      std::lock_guard lock(mutex_);
      error_ = std::current_exception();
    }
    std::lock_guard lock(mutex_);
    done_ = true;
    ready_.notify_all();
  }

  std::unique_ptr<SequentialReader> reader_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable ready_, space_;
  std::deque<Example> queue_;
  bool done_ = false, stop_ = false;
  std::exception_ptr error_;
};

class InterleaveReader final : public SequentialReader {
 public:
  InterleaveReader(std::vector<std::string> files, const InterleaveSpec& spec,
                   std::function<std::shared_ptr<DataSource>(const std::string&)> open)
      : files_(std::move(files)), spec_(spec), open_(std::move(open)) {}

  void start_epoch(uint64_t epoch) override {
    epoch_ = epoch;
    cycle_.clear();
    next_file_ = 0;
    slot_ = 0;
    taken_in_block_ = 0;
    cycle_.resize(static_cast<size_t>(std::max<int64_t>(1, std::min<int64_t>(spec_.cycle_length, static_cast<int64_t>(files_.size())))));
    fill_cycle();
  }

  // tf.data's order: block_length elements from the file in the current slot, then the next slot. A finished
  // file leaves its slot empty; the next unopened file fills it when the cycle comes back to it.
  bool next(Example& out) override {
    for (;;) {
      bool any_open = false;
      for (const auto& f : cycle_) any_open = any_open || f != nullptr;
      if (!any_open && next_file_ >= files_.size()) return false;
      auto& file = cycle_[slot_];
      if (!file) {
        if (next_file_ >= files_.size()) {
          advance();
          continue;
        }
        file = open_file(next_file_++);
      }
      if (file->next(out)) {
        if (++taken_in_block_ >= spec_.block_length) advance();
        return true;
      }
      file.reset();
      advance();
    }
  }

 private:
  void advance() {
    taken_in_block_ = 0;
    slot_ = (slot_ + 1) % cycle_.size();
  }
  std::unique_ptr<OpenFile> open_file(size_t i) {
    return std::make_unique<OpenFile>(make_source_reader(open_(files_[i])), epoch_, spec_.parallel);
  }
  // Open the first files at once, so parallel reads start ahead of need.
  void fill_cycle() {
    for (auto& slot : cycle_)
      if (next_file_ < files_.size()) slot = open_file(next_file_++);
  }

  std::vector<std::string> files_;
  InterleaveSpec spec_;
  std::function<std::shared_ptr<DataSource>(const std::string&)> open_;
  uint64_t epoch_ = 0;
  std::vector<std::unique_ptr<OpenFile>> cycle_;
  size_t next_file_ = 0;
  size_t slot_ = 0;
  int64_t taken_in_block_ = 0;
};

}  // namespace

std::unique_ptr<SequentialReader> make_source_reader(std::shared_ptr<DataSource> source) {
  return std::make_unique<SourceReader>(std::move(source));
}

std::unique_ptr<SequentialReader> make_interleave_reader(std::vector<std::string> files, const InterleaveSpec& spec,
                                                         std::function<std::shared_ptr<DataSource>(const std::string&)> open) {
  return std::make_unique<InterleaveReader>(std::move(files), spec, std::move(open));
}

}  // namespace ramjet::core
