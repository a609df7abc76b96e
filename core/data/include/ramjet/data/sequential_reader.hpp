// Reading a source front to back, one epoch at a time: a single source, or several files interleaved as
// tf.data's interleave does (cycle_length files open at once, block_length elements from each in turn,
// optionally each file reading ahead on its own thread). The order is deterministic either way.
#pragma once

#include "ramjet/plugin/components.hpp"
#include "ramjet/data/pipeline_spec.hpp"

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace ramjet::core {

class SequentialReader {
 public:
  virtual ~SequentialReader() = default;
  virtual void start_epoch(uint64_t epoch) = 0;
  // The next element of this epoch; false at its end.
  virtual bool next(Example& out) = 0;
};

// Reads one source: next() for sequential sources, get(0..n) for random-access ones.
std::unique_ptr<SequentialReader> make_source_reader(std::shared_ptr<DataSource> source);

// One source per file, made on demand by `open(file)`.
std::unique_ptr<SequentialReader> make_interleave_reader(std::vector<std::string> files, const InterleaveSpec& spec,
                                                         std::function<std::shared_ptr<DataSource>(const std::string&)> open);

}  // namespace ramjet::core
