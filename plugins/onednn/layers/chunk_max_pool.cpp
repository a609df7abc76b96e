#include "chunk_max_pool.hpp"

#include "../batch_chunks.hpp"
#include "../thread_scope.hpp"
#include "conv2d_choice.hpp"

namespace onednn {

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
    const auto relu_bwd = dnnl::algorithm::eltwise_relu_use_dst_for_bwd;  // the pooled output is kept; its input not
    if (relu)
      p.relu_forward = dnnl::eltwise_forward::primitive_desc({b.forward_kind(), relu_bwd, pooled, 0.f, 0.f},
                                                             b.attr(), b.engine());
    if (!b.backward()) return p;
    p.backward = dnnl::pooling_backward::primitive_desc(
        {dnnl::algorithm::pooling_max, conv_chunk, pooled, strides, kernel, pad_l, pad_r}, b.attr(), b.engine(),
        p.forward);
    if (is_reference(p.backward) || p.backward.diff_src_desc() != conv_chunk) return std::nullopt;
    if (relu)
      p.relu_backward = dnnl::eltwise_backward::primitive_desc({relu_bwd, pooled, pooled, 0.f, 0.f}, b.attr(),
                                                               b.engine(), p.relu_forward);
    return p;
  } catch (const dnnl::error&) {
    return std::nullopt;  // the convolution and the pool are built apart
  }
}

}  // namespace onednn
