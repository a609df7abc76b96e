// A layer's work over a batch cut into chunks of examples that the plan's threads take one at a time, each chunk
// on one thread with primitives built for one thread.
//
// Why: oneDNN splits each primitive evenly over its threads and waits for the slowest. When another process
// shares one of the CPUs, the thread on that CPU runs at about half speed and every primitive waits for it: the
// bench's ResNet kept about 0.5 of its quiet speed (issue 14). Taken a chunk at a time, the thread that has a CPU
// to itself takes more chunks. Measured with a standalone program (3x3 convolutions of the ResNet's shapes,
// forward and both backwards, batch 128, 2 pinned threads, 8 chunks of 16, Zen 4): as fast as oneDNN's own split
// when the machine is quiet (0.94-1.08 of its time), and 0.65-0.69 of the quiet speed beside one busy process,
// against 0.51 for the whole-batch primitive.
//
// Results do not depend on which thread takes a chunk: each chunk's primitive runs on one thread, and what is
// summed over the batch (a weight gradient) is summed chunk by chunk in chunk order.
#pragma once

#include "common.hpp"
#include "loop_share.hpp"

#include <omp.h>

#include <exception>

namespace onednn {

// How many examples a chunk holds for `batch` examples on `threads` threads: 16, or 8 where the batch is not a
// multiple of 16, with at least two chunks; 0 where the batch is not cut (one thread, or a batch of another size).
int64_t chunk_examples(int64_t batch, int threads);

// Whether `desc` keeps each example's values together and the examples one after another (batch outermost, not
// blocked, no padding or offset along it), so that examples [i, i + n) are one run of bytes.
bool batch_outermost(const md& desc);
// `chunk`, a batch_outermost layout of a chunk, for `batch` examples: the same layout, a longer run.
md with_batch(const md& chunk, int64_t batch);

// Runs body(chunk, lane) for chunk = 0 .. chunks - 1 on `lanes` threads (lane: the running thread's index, below
// `lanes`), handing out chunks as threads come free; a thread done early takes a teammate that waits for its CPU onto
// its own (loop_share.hpp). Layers' own parallel loops inside run on that thread alone.
// An exception from any chunk is rethrown once every thread has stopped.
template <class Body>
void for_each_chunk(int64_t chunks, int lanes, const Body& body) {
  std::exception_ptr error;
  const LoopTicket ticket;
#pragma omp parallel num_threads(lanes)
  {
    omp_set_num_threads(1);  // a primitive inside runs on this thread alone, nested or not
    const int lane = omp_get_thread_num();
    const LoopShare share(ticket);
#pragma omp for schedule(dynamic, 1) nowait
    for (int64_t c = 0; c < chunks; ++c) {
      try {
        body(c, lane);
      } catch (...) {
#pragma omp critical(ramjet_batch_chunk_error)
        if (!error) error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
}

// target = parts[0] + parts[1] + ... in that order, element by element (float32, same layout), on `lanes` threads.
void sum_in_order(const std::vector<dnnl::memory>& parts, const dnnl::memory& target, int lanes);

}  // namespace onednn
