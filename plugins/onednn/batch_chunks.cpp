#include "batch_chunks.hpp"

#include <algorithm>

namespace onednn {

int64_t chunk_examples(int64_t batch, int threads) {
  if (threads < 2) return 0;
  for (int64_t size : {16, 8})
    if (batch % size == 0 && batch / size >= 2) return size;
  return 0;
}

bool batch_outermost(const md& desc) {
  const dnnl_memory_desc_t& d = desc.data;
  if (d.format_kind != dnnl_blocked || d.ndims < 2 || d.offset0 != 0 || d.padded_dims[0] != d.dims[0] ||
      d.padded_offsets[0] != 0)
    return false;
  const dnnl_blocking_desc_t& b = d.format_desc.blocking;
  for (int i = 0; i < b.inner_nblks; ++i)
    if (b.inner_idxs[i] == 0) return false;
  // One example: every value of the other dims, padding included, in one run below the batch stride.
  dnnl_dim_t example = 1;
  for (int i = 1; i < d.ndims; ++i) example *= d.padded_dims[i];
  return b.strides[0] == example;
}

md with_batch(const md& chunk, int64_t batch) {
  dnnl_memory_desc_t d = chunk.data;
  d.dims[0] = batch;
  d.padded_dims[0] = batch;
  return md(d);
}

void sum_in_order(const std::vector<dnnl::memory>& parts, const dnnl::memory& target, int lanes) {
  const int64_t n = static_cast<int64_t>(float_count(target));
  float* out = floats(target);
  constexpr int64_t kBlock = 4096;  // floats a thread sums at a time: a few pages, all parts' rows in L1/L2
  // The parts' addresses are read per block, not gathered first: a step allocates nothing.
  const LoopTicket ticket;
#pragma omp parallel num_threads(lanes) if (n > kBlock)  // a bias: no team for one block
  {
    const LoopShare share(ticket);
#pragma omp for schedule(dynamic, 1) nowait
    for (int64_t start = 0; start < n; start += kBlock) {
      const int64_t end = std::min(n, start + kBlock);
      const float* first = floats(parts[0]);
      std::copy(first + start, first + end, out + start);
      for (size_t p = 1; p < parts.size(); ++p) {
        const float* in = floats(parts[p]);
        for (int64_t i = start; i < end; ++i) out[i] += in[i];
      }
    }
  }
}

}  // namespace onednn
