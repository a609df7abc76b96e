#include "chunk_max_pool.hpp"

#include "../batch_chunks.hpp"
#include "../thread_scope.hpp"
#include "conv2d_choice.hpp"

#include <cstring>

namespace onednn {

namespace {

// Sixteen bytes at a time through GCC's vector types (one SSE register, in the baseline the build targets), the
// rest one by one. bf16 is compared as its bits read as int16: a positive finite number or +inf lies in
// [1, 0x7F80]; zeros, negative numbers and NaNs do not.
typedef float F4 __attribute__((vector_size(16)));
typedef int16_t S8 __attribute__((vector_size(16)));

template <class T, class V, class Step>
void by_vectors(T* data, const T* other, size_t count, Step step) {
  constexpr size_t kLanes = sizeof(V) / sizeof(T);
  size_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
    V v, o;
    std::memcpy(&v, data + i, sizeof v);
    std::memcpy(&o, other + i, sizeof o);
    v = step(v, o);
    std::memcpy(data + i, &v, sizeof v);
  }
  for (; i < count; ++i) {
    V v{}, o{};
    v[0] = data[i];
    o[0] = other[i];
    data[i] = step(v, o)[0];
  }
}

}  // namespace

void relu_in_place(void* data, size_t bytes, dt type) {
  if (type == dt::bf16) {
    auto* d = static_cast<int16_t*>(data);
    return by_vectors<int16_t, S8>(d, d, bytes / 2, [](S8 v, S8) { return (v > 0) & (v <= 0x7F80) ? v : S8{}; });
  }
  auto* d = static_cast<float*>(data);
  by_vectors<float, F4>(d, d, bytes / 4, [](F4 v, F4) { return v > 0 ? v : F4{}; });
}

void relu_backward_in_place(const void* relu_out, void* diff, size_t bytes, dt type) {
  if (type == dt::bf16)
    return by_vectors<int16_t, S8>(static_cast<int16_t*>(diff), static_cast<const int16_t*>(relu_out), bytes / 2,
                                   [](S8 d, S8 y) { return (y > 0) & (y <= 0x7F80) ? d : S8{}; });
  by_vectors<float, F4>(static_cast<float*>(diff), static_cast<const float*>(relu_out), bytes / 4,
                        [](F4 d, F4 y) { return y > 0 ? d : F4{}; });
}

md ChunkMaxPool::workspace_desc() const {
  if (!loops) return forward.workspace_desc();
  if (forward.workspace_desc().get_size() == 0) return md();  // inference keeps no argmax
  return md({loops->examples, loops->out_example}, dt::u8, tag::ab);  // a byte per pooled value, as they lie
}

std::optional<ChunkMaxPool> chunk_max_pool(const NodeSpec& pool, const LayerBuilder& b, const Shape& conv_shape,
                                           const md& conv_chunk, bool relu) {
  if (pool.op != "max_pool" || conv_shape.size() != 3) return std::nullopt;
  const ramjet::ir::PoolGeometry g = ramjet::ir::pool_geometry(pool, conv_shape, false);
  ChunkMaxPool p;
  p.shape = {g.OH, g.OW, g.C};
  if (p.shape != pool.shape) return std::nullopt;
  const auto &k = g.kernel, &s = g.strides, &pad = g.padding;
  const dnnl::memory::dims strides{s[0], s[1]}, kernel{k[0], k[1]}, pad_l{pad[0], pad[2]}, pad_r{pad[1], pad[3]};
  const md dst_any({conv_chunk.dims()[0], g.C, g.OH, g.OW}, conv_chunk.data_type(), tag::any);
  ThreadScope one(1);  // run by the one thread that convolved the chunk
  try {
    p.forward = dnnl::pooling_forward::primitive_desc(
        {b.forward_kind(), dnnl::algorithm::pooling_max, conv_chunk, dst_any, strides, kernel, pad_l, pad_r},
        b.attr(), b.engine());
    const md pooled = p.forward.dst_desc(), workspace = p.forward.workspace_desc();
    if (is_reference(p.forward) || !batch_outermost(pooled) ||
        (workspace.get_size() > 0 && !batch_outermost(workspace)))
      return std::nullopt;
    p.relu = relu;
    p.loops = max_pool_loops(conv_chunk, pooled, kernel, strides, pad_l, pad_r);
    if (p.loops) p.loops->relu = relu;
    if (!b.backward()) return p;
    p.backward = dnnl::pooling_backward::primitive_desc(
        {dnnl::algorithm::pooling_max, conv_chunk, pooled, strides, kernel, pad_l, pad_r}, b.attr(), b.engine(),
        p.forward);
    if (is_reference(p.backward) || p.backward.diff_src_desc() != conv_chunk) return std::nullopt;
    return p;
  } catch (const dnnl::error&) {
    return std::nullopt;  // the convolution and the pool are built apart
  }
}

}  // namespace onednn
