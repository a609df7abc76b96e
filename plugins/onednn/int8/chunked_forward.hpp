// A batch run as chunks of examples, each chunk through the whole graph on one thread, instead of each layer over
// the whole batch on every thread.
//
// Why: a layer over a batch of 256 MobileNet examples writes 3 to 6 MB that the next layer reads back from the
// shared L3 cache or memory, and between two layers every thread waits for the slowest. A chunk of a few examples
// keeps its activations in the core's own L2 cache from the first layer to the last, and threads meet once per
// batch. On the bench's int8 MobileNet (batch 256, 2 threads, Zen 4) that took a batch from 8.9 to 8.1 ms.
//
// Each thread has its own plans (one per chunk size it meets), stream and buffers; the plans' primitives are
// built for one thread, and run with one (oneDNN runs a primitive on the calling thread alone inside a parallel
// region). Examples are independent and int8 sums are exact, so the outputs are those of the whole-batch plan.
#pragma once

#include "qplan.hpp"

#include <map>
#include <memory>
#include <vector>

namespace onednn::int8 {

class ChunkedForward {
 public:
  // How many chunks to cut `batch` examples into on `team` threads when a plan's largest activation takes
  // `largest_value_bytes` per example: chunks of the largest power of two of examples whose largest activation
  // fits kChunkBytes, their count rounded up to a multiple of the threads, at most one chunk per example. 1: one
  // plan runs the batch whole.
  static int64_t chunk_count(int64_t batch, int team, int64_t largest_value_bytes);

  ChunkedForward(const Graph& graph, const QuantTable& quant, const QParamStore& params, const dnnl::engine& engine)
      : graph_(graph), quant_(quant), params_(params), engine_(engine) {}

  // Runs `batch` examples as `chunks` chunks (from chunk_count; sizes within one of each other) over `team`
  // threads (the calling ThreadScope's). `inputs[i]`/`outputs[i]`: the graph's i-th input/output as contiguous
  // float32 [batch, ...]; `input_sizes[i]`/`output_sizes[i]`: the floats of one example. Plans for new chunk sizes
  // are built first, on the calling thread; an error in any chunk is thrown once every thread has stopped.
  void run(int team, int64_t batch, int64_t chunks, const std::vector<const float*>& inputs,
           const std::vector<int64_t>& input_sizes, const std::vector<float*>& outputs,
           const std::vector<int64_t>& output_sizes);

  // What a chunk's largest activation may take: half of a 1 MiB L2 (Zen 4, Ice Lake server and later have 1 to
  // 2 MiB a core), the other half left to the next layer's output and weights.
  static constexpr int64_t kChunkBytes = 512 * 1024;

 private:
  struct Lane {  // one thread's
    std::unique_ptr<dnnl::stream> stream;
    std::map<int64_t, std::unique_ptr<QPlan>> plans;  // by chunk size
    std::vector<const float*> in;                     // the current chunk's rows, kept between calls
    std::vector<float*> out;
  };
  QPlan& plan(Lane& lane, int64_t examples);

  const Graph& graph_;
  const QuantTable& quant_;
  const QParamStore& params_;
  dnnl::engine engine_;
  std::vector<Lane> lanes_;
};

}  // namespace onednn::int8
