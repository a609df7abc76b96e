#include "chunked_forward.hpp"

#include "../thread_scope.hpp"

#include <omp.h>

#include <algorithm>
#include <exception>

namespace onednn::int8 {

int64_t ChunkedForward::chunk_count(int64_t batch, int team, int64_t largest_value_bytes) {
  const int64_t threads = std::max(team, 1);
  // A power of two: those divide the usual batch sizes, so every chunk of a batch has one size and one plan.
  int64_t fits = 1;
  while (fits * 2 * std::max<int64_t>(largest_value_bytes, 1) <= kChunkBytes) fits *= 2;
  // As many chunks as the cache needs, rounded up to a whole number per thread, so that threads finish together.
  const int64_t chunks = ((batch + fits - 1) / fits + threads - 1) / threads * threads;
  return std::min(chunks, batch);
}

QPlan& ChunkedForward::plan(Lane& lane, int64_t examples) {
  auto it = lane.plans.find(examples);
  if (it != lane.plans.end()) return *it->second;
  // Primitives are laid out for the thread count they are built under; each chunk runs on one thread.
  ThreadScope one(1);
  auto built = std::make_unique<QPlan>(graph_, quant_, params_, engine_, examples);
  return *lane.plans.emplace(examples, std::move(built)).first->second;
}

void ChunkedForward::run(int team, int64_t batch, int64_t chunks, const std::vector<const float*>& inputs,
                         const std::vector<int64_t>& input_sizes, const std::vector<float*>& outputs,
                         const std::vector<int64_t>& output_sizes) {
  const int threads = std::max(team, 1);
  if (lanes_.size() < static_cast<size_t>(threads)) lanes_.resize(static_cast<size_t>(threads));
  // Chunk c holds `base` examples, one more for the first `extra` chunks.
  const int64_t base = batch / chunks, extra = batch % chunks;
  for (int t = 0; t < threads; ++t) {
    Lane& lane = lanes_[static_cast<size_t>(t)];
    if (!lane.stream) lane.stream = std::make_unique<dnnl::stream>(engine_);
    plan(lane, base);
    if (extra > 0) plan(lane, base + 1);
    lane.in.resize(inputs.size());
    lane.out.resize(outputs.size());
  }
  std::exception_ptr error;
#pragma omp parallel num_threads(threads)
  {
    omp_set_num_threads(1);  // layers' own parallel loops run on this thread alone, nested or not
    Lane& lane = lanes_[static_cast<size_t>(omp_get_thread_num())];
    std::vector<const float*>& in = lane.in;
    std::vector<float*>& out = lane.out;
#pragma omp for schedule(static)
    for (int64_t c = 0; c < chunks; ++c) {
      try {
        const int64_t first = c * base + std::min(c, extra), examples = base + (c < extra ? 1 : 0);
        for (size_t i = 0; i < in.size(); ++i) in[i] = inputs[i] + first * input_sizes[i];
        for (size_t i = 0; i < out.size(); ++i) out[i] = outputs[i] + first * output_sizes[i];
        lane.plans.at(examples)->forward_rows(*lane.stream, params_, in, out);
      } catch (...) {
#pragma omp critical(ramjet_int8_chunk_error)
        if (!error) error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace onednn::int8
