// conv2d over a batch cut into chunks of examples (batch_chunks.hpp): the convolution of conv2d.cpp, with each
// chunk's forward, backward-weights and backward-data run by one thread on primitives built for one thread, and
// the weight gradient summed over the chunks in chunk order. A batch norm that reads the output may have its
// statistics summed on each chunk too (norm_link.hpp). Used where the plan has more than one thread, the
// batch cuts into equal chunks, and the one-thread primitives are JIT kernels whose layouts keep the examples
// apart; elsewhere (one thread, other batches, a conv1d, AMX's bf16 weight gradient where conv2d_choice.hpp says
// float32 pays, a reference kernel) conv2d.cpp builds its whole-batch layer. A max_pool that is the convolution's
// one reader can run in the same chunks (chunk_max_pool.hpp). Two parts have their own ways where oneDNN's kernel
// wastes work: an input gradient whose size Winograd's tiles overshoot (winograd_border.hpp), and bf16's weight
// gradient on small maps (f32_winograd_weights below).
#include "../batch_chunks.hpp"
#include "../edge.hpp"
#include "../layout.hpp"
#include "../norm_link.hpp"
#include "../thread_scope.hpp"
#include "../weights.hpp"
#include "activation.hpp"
#include "chunk_max_pool.hpp"
#include "conv2d_choice.hpp"
#include "registry.hpp"
#include "winograd_border.hpp"

#include <cstring>
#include <optional>
#include <string>

namespace onednn {
namespace {

// The primitives of one chunk, built before anything of the layer is, so that a convolution they do not suit
// leaves the builder untouched for conv2d.cpp's layer.
struct ChunkConvPrimitives {
  dt type = dt::f32;  // what the convolution computes in: the plan's compute type, or float32 (float32_stem)
  int64_t examples = 0, chunks = 0;
  dnnl::convolution_forward::primitive_desc forward;
  dnnl::convolution_backward_weights::primitive_desc weights;  // a training plan's
  dnnl::convolution_backward_data::primitive_desc data;        // where the input needs a gradient
  std::optional<WinogradBorder> border;  // in place of `data` where Winograd's tiles would not fit the input
  bool weights_from_f32 = false;  // bf16 maps: `weights` is float32 Winograd on float32 copies of the chunk
};

// The weight gradient of a chunk of bf16 maps as float32 Winograd on float32 copies, where oneDNN's bf16 kernel is
// the direct one for native AVX-512 bf16 (not AMX's, not the emulation on plain AVX-512) and the output map is
// small and fills Winograd's 4x4 tiles well. Measured on
// one Zen 4 core, 16 examples, float32 with its two copies against bf16 (ms): 13x13 -> 11x11, 32 -> 64 channels
// 0.37 / 0.42; 7x7 "same" 64 -> 64 0.32 / 0.37 and 128 -> 128 0.99 / 1.12; but 9x9 64 -> 64 (tiles of 12x12)
// 0.69 / 0.56, and 14x14 and 28x28 maps 0.36-0.64 / 0.30-0.58, where the bf16 kernel is the faster. Nullopt
// elsewhere, and where Winograd does not apply.
std::optional<dnnl::convolution_backward_weights::primitive_desc> f32_winograd_weights(
    const ConvGeometry& g, const md& src, const md& dst, const md& bias,
    const dnnl::convolution_backward_weights::primitive_desc& bf16, const LayerBuilder& b) {
  if (std::string(bf16.impl_info_str()) != "jit_bf16:avx512_core_bf16" || !winograd_pays(g, dt::f32, false, true))
    return std::nullopt;
  const int64_t tiled = ((g.OH + 3) / 4 * 4) * ((g.OW + 3) / 4 * 4), map = g.OH * g.OW;
  if (map > 121 || tiled * 100 > map * 135) return std::nullopt;
  const md src32 = with_type(src, dt::f32), dst32 = with_type(dst, dt::f32);
  try {
    const auto pd = f32_weights_pd(g, dnnl::algorithm::convolution_winograd, src32, dst32, bias, b.attr(), b.engine());
    if (is_reference(pd) || pd.src_desc() != src32 || pd.diff_dst_desc() != dst32) return std::nullopt;
    return pd;
  } catch (const dnnl::error&) {
    return std::nullopt;
  }
}

// Whether a bf16 convolution with a fused max pool computes in float32: one that reads a single channel (an image's
// stem). oneDNN 2.6's bf16 kernels for one input channel are its slowest (on the AMX Xeon the CNN's stem took
// about a sixth of the bf16 step, forward and backward-weights, in perf; in float32 about a third of that), and the
// pool shrinks the map fourfold before the next layer's edge turns it into bf16.
bool float32_stem(const ConvGeometry& g, const LayerBuilder& b) {
  return b.compute_type() == dt::bf16 && g.C == 1 && g.G == 1;
}

std::optional<ChunkConvPrimitives> chunk_conv_primitives(const NodeSpec& node, const LayerBuilder& b,
                                                         const ConvGeometry& g, const PostActivation& act,
                                                         dt type) {
  ChunkConvPrimitives p;
  p.type = type;
  p.examples = chunk_examples(b.batch(), b.threads());
  if (p.examples == 0) return std::nullopt;
  p.chunks = b.batch() / p.examples;
  const int64_t M = p.examples, C = g.C, F = g.F;
  const bool use_bias = node.attr_bool("use_bias", true);
  const md bias_md = use_bias ? row_major_md({F}) : md();
  const dnnl::memory::dims wdims = hwio_kernel_md(g.kernel[0], g.kernel[1], C, F, g.G, dt::f32).dims();
  const dnnl::memory::dims strides{g.strides[0], g.strides[1]}, dilates{g.dilation[0] - 1, g.dilation[1] - 1},
      pad_l{g.padding[0], g.padding[2]}, pad_r{g.padding[1], g.padding[3]};
  const md wei_any(wdims, type, tag::any), diff_wei_any(wdims, dt::f32, tag::any);

  ThreadScope one(1);  // each chunk runs on one thread: lay the kernels out for one
  dnnl::primitive_attr attr = b.attr();
  act.add_to(attr);
  const bool winograd = winograd_pays(g, type, false, b.backward());
  auto forward_pd = [&](tag image_tag, dnnl::algorithm a) {
    const md src({M, C, g.H, g.W}, type, image_tag), dst({M, F, g.OH, g.OW}, type, image_tag);
    return dnnl::convolution_forward::primitive_desc(
        {b.forward_kind(), a, src, wei_any, bias_md, dst, strides, dilates, pad_l, pad_r}, attr, b.engine());
  };
  // As conv2d.cpp: Winograd where it pays and oneDNN has it, direct otherwise; a one-channel output, or a bf16
  // stem before AMX convolutions (conv2d_choice.hpp), plain nhwc where oneDNN has a kernel for that.
  auto with_algorithm = [&](auto make) {
    if (winograd) try {
        return make(dnnl::algorithm::convolution_winograd);
      } catch (const dnnl::error&) {
      }
    return make(dnnl::algorithm::convolution_direct);
  };
  try {
    const tag image_tag = F == 1 || channels_last_stem(g, type) ? tag::nhwc : tag::any;
    p.forward = with_algorithm([&](dnnl::algorithm a) { return forward_pd(image_tag, a); });
    if (image_tag == tag::nhwc && is_reference(p.forward))
      p.forward = with_algorithm([&](dnnl::algorithm a) { return forward_pd(tag::any, a); });
    if (is_reference(p.forward)) return std::nullopt;
    const md src = p.forward.src_desc(), dst = p.forward.dst_desc();
    if (!batch_outermost(src) || !batch_outermost(dst)) return std::nullopt;
    if (!b.backward()) return p;

    p.weights = with_algorithm([&](dnnl::algorithm a) {
      return dnnl::convolution_backward_weights::primitive_desc(
          {a, src, diff_wei_any, bias_md, dst, strides, dilates, pad_l, pad_r}, b.attr(), b.engine(), p.forward);
    });
    if (is_reference(p.weights) || p.weights.src_desc() != src || p.weights.diff_dst_desc() != dst ||
        (type == dt::bf16 && f32_weight_gradient_pays(g, p.weights)))
      return std::nullopt;
    if (type == dt::bf16)
      if (auto f32 = f32_winograd_weights(g, src, dst, bias_md, p.weights, b)) {
        p.weights = *f32;
        p.weights_from_f32 = true;
      }
    if (!b.input(0).needs_grad) return p;
    p.data = with_algorithm([&](dnnl::algorithm a) {
      return dnnl::convolution_backward_data::primitive_desc(
          {a, src, wei_any, dst, strides, dilates, pad_l, pad_r}, b.attr(), b.engine(), p.forward);
    });
    if (is_reference(p.data) || p.data.diff_src_desc() != src || p.data.diff_dst_desc() != dst) return std::nullopt;
    if (type == dt::f32 && std::string(p.data.impl_info_str()).find("wino") != std::string::npos)
      p.border = winograd_border(g, src, dst, b.attr(), b.engine());
    return p;
  } catch (const dnnl::error&) {
    return std::nullopt;  // conv2d.cpp's layer builds it, or says why it cannot
  }
}

class ChunkedConv2D : public Layer {
 public:
  // With `pool`, the max_pool the plan fused in (builder.fused_pool()) runs on each chunk too, and the layer's
  // output is the pool's.
  ChunkedConv2D(const NodeSpec& node, LayerBuilder& b, const ConvGeometry& g, PostActivation act,
                const ChunkConvPrimitives& p, const std::optional<ChunkMaxPool>& pool = std::nullopt)
      : act_(std::move(act)), pooled_(pool.has_value()), relu_after_pool_(pool && pool->relu),
        compute_type_(p.type), chunks_(p.chunks), examples_(p.examples), lanes_(static_cast<size_t>(b.threads())) {
    const int64_t N = b.batch(), C = g.C, F = g.F;
    b.check_shape(Shape{g.OH, g.OW, F});
    Param& kernel = b.param("kernel", Shape{g.kernel[0], g.kernel[1], C / g.G, F});
    Param* bias = node.attr_bool("use_bias", true) ? &b.param("bias", {F}) : nullptr;
    const md keras_kernel = hwio_kernel_md(g.kernel[0], g.kernel[1], C, F, g.G, dt::f32);
    out_ = &b.output();
    const md src = p.forward.src_desc(), dst = p.forward.dst_desc();
    src_bytes_ = src.get_size();
    dst_bytes_ = dst.get_size();

    in_ = Edge(b, b.input(0), with_batch(src, N));
    md pooled, workspace;
    if (pool) {
      pooled = pool->forward.dst_desc();
      workspace = pool->workspace_desc();
      pool_loops_ = pool->loops;
      pooled_bytes_ = pooled.get_size();
      workspace_bytes_ = workspace.get_size();
      b.define_output(with_batch(pooled, N));
      if (workspace_bytes_ > 0) workspace_ = b.transient(with_batch(workspace, N));  // the argmax, for backward
    } else {
      dst_ = act_.finish(b, with_batch(dst, N));
      if (b.norm_link() && act_.linear()) {  // the batch norm reads the output as it is: offer it the chunks
        link_ = b.norm_link();
        link_->offered = true;
      }
    }
    kernel_ = WeightsView(b, kernel, keras_kernel);
    const dnnl::memory forward_weights = kernel_.compute(p.forward.weights_desc());
    const bool weights = b.backward(), data = weights && in_.needs_grad();
    {
      ThreadScope one(1);  // the kernels for the one thread that runs a chunk, as their descriptors were
      forward_ = dnnl::convolution_forward(p.forward);
      if (weights) backward_weights_ = dnnl::convolution_backward_weights(p.weights);
      if (weights && p.weights_from_f32) {
        widen_src_pd_ = dnnl::reorder::primitive_desc(b.engine(), p.forward.src_desc(), b.engine(),
                                                      p.weights.src_desc(), b.attr());
        widen_dst_pd_ = dnnl::reorder::primitive_desc(b.engine(), p.forward.dst_desc(), b.engine(),
                                                      p.weights.diff_dst_desc(), b.attr());
        widen_src_ = dnnl::reorder(widen_src_pd_);
        widen_dst_ = dnnl::reorder(widen_dst_pd_);
        weights_from_f32_ = true;
      }
      if (data && p.border) {
        border_ = p.border;
        tiles_ = dnnl::convolution_forward(border_->tiles);
      } else if (data) {
        backward_data_ = dnnl::convolution_backward_data(p.data);
      }
      if (pool && !pool->loops) {
        pool_forward_ = dnnl::pooling_forward(pool->forward);
        if (weights) pool_backward_ = dnnl::pooling_backward(pool->backward);
      }
    }
    dnnl::memory data_weights;
    if (weights) {
      kernel_grad_ = GradSink(b, kernel, keras_kernel, p.weights.diff_weights_desc());
      if (bias) bias_grad_ = GradSink(b, *bias, row_major_md({F}), p.weights.diff_bias_desc());
      for (int64_t c = 0; c < chunks_; ++c) {  // filled and read within one backward
        kernel_parts_.push_back(b.transient_grad(p.weights.diff_weights_desc()));
        if (bias) bias_parts_.push_back(b.transient_grad(p.weights.diff_bias_desc()));
      }
    }
    if (border_) {
      flipped_.resize(static_cast<size_t>(9 * C * F));
      taps_.resize(flipped_.size());
      flipped_oihw_ = dnnl::memory({{C, F, 3, 3}, dt::f32, tag::oihw}, b.engine(), flipped_.data());
      flipped_tiles_ = dnnl::memory(border_->tiles.weights_desc(), b.engine());
      ThreadScope one(1);
      flip_reorder_ = dnnl::reorder(flipped_oihw_, flipped_tiles_);
      flip_args_ = {{DNNL_ARG_FROM, flipped_oihw_}, {DNNL_ARG_TO, flipped_tiles_}};
    } else if (data) {
      data_weights = kernel_.compute(p.data.weights_desc());
    }

    // Each lane's views of its current chunk; their handles move to the chunk a thread takes.
    const dnnl::engine& engine = b.engine();
    for (size_t i = 0; i < lanes_.size(); ++i) {
      Lane& lane = lanes_[i];
      lane.stream = dnnl::stream(engine);
      lane.src = dnnl::memory(src, engine, DNNL_MEMORY_NONE);
      // Pooled, a chunk's output (and in backward its gradient) lives only in the lane's own buffer.
      lane.dst = pool ? dnnl::memory(dst, engine) : dnnl::memory(dst, engine, DNNL_MEMORY_NONE);
      lane.forward_args = {{DNNL_ARG_SRC, lane.src}, {DNNL_ARG_WEIGHTS, forward_weights}, {DNNL_ARG_DST, lane.dst}};
      if (bias) lane.forward_args[DNNL_ARG_BIAS] = bias->value;
      b.use_lane_scratchpad(p.forward, lane.forward_args, static_cast<int>(i));
      if (weights) {
        lane.diff_weights = dnnl::memory(p.weights.diff_weights_desc(), engine, DNNL_MEMORY_NONE);
        lane.weights_args = {{DNNL_ARG_SRC, lane.src}, {DNNL_ARG_DIFF_DST, lane.dst},
                             {DNNL_ARG_DIFF_WEIGHTS, lane.diff_weights}};
        if (p.weights_from_f32) {  // the chunk's maps copied to float32 first
          lane.src32 = dnnl::memory(p.weights.src_desc(), engine);
          lane.dst32 = dnnl::memory(p.weights.diff_dst_desc(), engine);
          lane.widen_src_args = {{DNNL_ARG_FROM, lane.src}, {DNNL_ARG_TO, lane.src32}};
          lane.widen_dst_args = {{DNNL_ARG_FROM, lane.dst}, {DNNL_ARG_TO, lane.dst32}};
          lane.weights_args[DNNL_ARG_SRC] = lane.src32;
          lane.weights_args[DNNL_ARG_DIFF_DST] = lane.dst32;
          b.use_lane_scratchpad(widen_src_pd_, lane.widen_src_args, static_cast<int>(i));
          b.use_lane_scratchpad(widen_dst_pd_, lane.widen_dst_args, static_cast<int>(i));
        }
        if (bias) {
          lane.diff_bias = dnnl::memory(p.weights.diff_bias_desc(), engine, DNNL_MEMORY_NONE);
          lane.weights_args[DNNL_ARG_DIFF_BIAS] = lane.diff_bias;
        }
        b.use_lane_scratchpad(p.weights, lane.weights_args, static_cast<int>(i));
      }
      if (border_) add_border_args(b, lane, static_cast<int>(i));
      if (data && !border_) {
        lane.diff_src = dnnl::memory(src, engine, DNNL_MEMORY_NONE);
        lane.data_args = {{DNNL_ARG_DIFF_DST, lane.dst}, {DNNL_ARG_WEIGHTS, data_weights},
                          {DNNL_ARG_DIFF_SRC, lane.diff_src}};
        b.use_lane_scratchpad(p.data, lane.data_args, static_cast<int>(i));
      }
      if (pool) add_pool_args(b, *pool, lane, static_cast<int>(i));
    }
  }

  void forward(const Exec& exec) override {
    in_.forward(exec);
    kernel_.refresh(exec);
    char* src = static_cast<char*>(in_.mem().get_data_handle());
    char* dst = pooled_ ? nullptr : static_cast<char*>(dst_.get_data_handle());
    char* pooled = pooled_ ? static_cast<char*>(out_->mem.get_data_handle()) : nullptr;
    char* workspace = workspace_ ? static_cast<char*>(workspace_.get_data_handle()) : nullptr;
    const bool norm_moments = link_ && link_->taken() && exec.training;
    for_each_chunk(chunks_, lane_count(), [&](int64_t c, int i) {
      Lane& lane = lanes_[static_cast<size_t>(i)];
      lane.src.set_data_handle(src + c * src_bytes_);
      if (!pooled_) lane.dst.set_data_handle(dst + c * dst_bytes_);  // pooled, it stays the lane's own buffer
      Exec::run_on(lane.stream, forward_, lane.forward_args);
      if (norm_moments) example_moments(dst, *link_->runs, *link_->scratch, c * examples_, examples_);
      if (!pooled_) return;
      lane.pooled.set_data_handle(pooled + c * pooled_bytes_);
      if (workspace) lane.workspace.set_data_handle(workspace + c * workspace_bytes_);
      if (pool_loops_)
        max_pool_forward(*pool_loops_, lane.dst.get_data_handle(), lane.pooled.get_data_handle(),
                         workspace ? static_cast<uint8_t*>(lane.workspace.get_data_handle()) : nullptr);
      else
        Exec::run_on(lane.stream, pool_forward_, lane.pool_forward_args);
      if (relu_after_pool_ && !pool_loops_) relu_in_place(lane.pooled.get_data_handle(), pooled_bytes_, compute_type_);
    });
    if (!pooled_) act_.forward(exec);
  }

  // Each chunk's backward-weights and backward-data one after the other, while the chunk's output gradient is in
  // the thread's cache.
  void backward(const Exec& exec) override {
    read_diff(*out_);
    char* diff = static_cast<char*>((pooled_ ? out_->diff : act_.backward(exec, out_->diff)).get_data_handle());
    char* src = static_cast<char*>(in_.mem().get_data_handle());
    char* pooled = pooled_ ? static_cast<char*>(out_->mem.get_data_handle()) : nullptr;
    char* workspace = workspace_ ? static_cast<char*>(workspace_.get_data_handle()) : nullptr;
    const bool data = in_.needs_grad();  // not for the first layer: no one wants d loss / d image
    char* diff_src = data ? static_cast<char*>(in_.begin_diff().get_data_handle()) : nullptr;
    if (data && !border_) kernel_.refresh(exec);
    if (data && border_ && flipped_version_ != kernel_.param().version) {  // the two parts' kernels, once a change
      border_kernels(kernel_.param().data(), border_->C, border_->F, flipped_.data(), taps_.data());
      Exec::run_on(lanes_[0].stream, flip_reorder_, flip_args_);
      flipped_version_ = kernel_.param().version;
    }
    // The `dst` views carry the output's gradient here: a pooled chunk's, rebuilt in the lane's own buffer.
    for_each_chunk(chunks_, lane_count(), [&](int64_t c, int i) {
      Lane& lane = lanes_[static_cast<size_t>(i)];
      lane.src.set_data_handle(src + c * src_bytes_);
      if (pooled_) {
        lane.pooled_diff.set_data_handle(diff + c * pooled_bytes_);
        lane.pooled.set_data_handle(pooled + c * pooled_bytes_);
        if (workspace) lane.workspace.set_data_handle(workspace + c * workspace_bytes_);
        if (relu_after_pool_ && !pool_loops_)
          relu_backward_in_place(lane.pooled.get_data_handle(), lane.pooled_diff.get_data_handle(), pooled_bytes_,
                                 compute_type_);
        if (pool_loops_)
          max_pool_backward(*pool_loops_, lane.pooled.get_data_handle(), lane.pooled_diff.get_data_handle(),
                            static_cast<const uint8_t*>(lane.workspace.get_data_handle()),
                            lane.dst.get_data_handle());
        else
          Exec::run_on(lane.stream, pool_backward_, lane.pool_backward_args);
      } else {
        lane.dst.set_data_handle(diff + c * dst_bytes_);
      }
      lane.diff_weights.set_data_handle(kernel_parts_[static_cast<size_t>(c)].get_data_handle());
      if (bias_grad_) lane.diff_bias.set_data_handle(bias_parts_[static_cast<size_t>(c)].get_data_handle());
      if (weights_from_f32_) {
        Exec::run_on(lane.stream, widen_src_, lane.widen_src_args);
        Exec::run_on(lane.stream, widen_dst_, lane.widen_dst_args);
      }
      Exec::run_on(lane.stream, backward_weights_, lane.weights_args);
      if (!data) return;
      if (border_) {
        float* chunk_diff_src = reinterpret_cast<float*>(diff_src + c * src_bytes_);
        const float* dy = static_cast<const float*>(lane.dst.get_data_handle());
        border_fill(*border_, dy, static_cast<float*>(lane.padded.get_data_handle()));
        Exec::run_on(lane.stream, tiles_, lane.tiles_args);
        border_place(*border_, static_cast<const float*>(lane.tiles_out.get_data_handle()), chunk_diff_src);
        border_backward_data(*border_, dy, taps_.data(), lane.border_lines.data(), chunk_diff_src);
        return;
      }
      lane.diff_src.set_data_handle(diff_src + c * src_bytes_);
      Exec::run_on(lane.stream, backward_data_, lane.data_args);
    });
    sum_in_order(kernel_parts_, kernel_grad_.target(exec), lane_count());
    kernel_grad_.commit(exec);
    if (bias_grad_) {
      sum_in_order(bias_parts_, bias_grad_.target(exec), lane_count());
      bias_grad_.commit(exec);
    }
    if (data) in_.end_diff(exec);
  }

 private:
  struct Lane {  // one thread's
    dnnl::stream stream;
    dnnl::memory src, dst, diff_src, diff_weights, diff_bias;
    Args forward_args, weights_args, data_args;
    dnnl::memory pooled, pooled_diff, workspace;  // with a pool: views of the chunk's share of the pool's output
    Args pool_forward_args, pool_backward_args;
    // With a Winograd border: the lane's zero-bordered output gradient (`padded`), the tiles' output, and the
    // border's lines (border_backward_data's).
    dnnl::memory padded, tiles_out;
    std::vector<float> border_lines;
    Args tiles_args;  // built once: a step allocates nothing
    // bf16 maps with a float32 weight gradient: the chunk's input and output gradient in float32.
    dnnl::memory src32, dst32;
    Args widen_src_args, widen_dst_args;
  };
  int lane_count() const { return static_cast<int>(lanes_.size()); }

  // The pool reads the convolution's output from the lane's buffer (`dst`) and, in backward, writes its gradient
  // there.
  void add_pool_args(LayerBuilder& b, const ChunkMaxPool& pool, Lane& lane, int i) {
    const dnnl::engine& engine = b.engine();
    const md pooled = pool.forward.dst_desc(), workspace = pool.workspace_desc();
    lane.pooled = dnnl::memory(pooled, engine, DNNL_MEMORY_NONE);
    if (workspace.get_size() > 0) lane.workspace = dnnl::memory(workspace, engine, DNNL_MEMORY_NONE);
    if (b.backward()) lane.pooled_diff = dnnl::memory(pooled, engine, DNNL_MEMORY_NONE);
    if (pool.loops) return;  // our loops take the views' handles, not oneDNN's arguments
    lane.pool_forward_args = {{DNNL_ARG_SRC, lane.dst}, {DNNL_ARG_DST, lane.pooled}};
    if (lane.workspace) lane.pool_forward_args[DNNL_ARG_WORKSPACE] = lane.workspace;
    b.use_lane_scratchpad(pool.forward, lane.pool_forward_args, i);
    if (!b.backward()) return;
    lane.pool_backward_args = {{DNNL_ARG_DIFF_DST, lane.pooled_diff}, {DNNL_ARG_DIFF_SRC, lane.dst}};
    if (lane.workspace) lane.pool_backward_args[DNNL_ARG_WORKSPACE] = lane.workspace;
    b.use_lane_scratchpad(pool.backward, lane.pool_backward_args, i);
  }

  void add_border_args(LayerBuilder& b, Lane& lane, int i) {
    const dnnl::engine& engine = b.engine();
    lane.padded = dnnl::memory(border_->padded, engine);
    std::memset(lane.padded.get_data_handle(), 0, border_->padded.get_size());  // the border stays zero
    lane.tiles_out = dnnl::memory(border_->tiles.dst_desc(), engine);
    lane.border_lines.assign(static_cast<size_t>(border_line_floats(*border_)), 0.0f);
    lane.tiles_args = {{DNNL_ARG_SRC, lane.padded}, {DNNL_ARG_WEIGHTS, flipped_tiles_}, {DNNL_ARG_DST, lane.tiles_out}};
    b.use_lane_scratchpad(border_->tiles, lane.tiles_args, i);
  }

  Edge in_;
  Value* out_ = nullptr;
  PostActivation act_;
  bool pooled_, relu_after_pool_;
  dnnl::memory dst_;       // unpooled: the whole batch's output
  dnnl::memory workspace_;  // pooled in training: the argmax positions of every chunk
  std::optional<PoolLoops> pool_loops_;  // our own pool loops, in place of the two primitives
  dnnl::pooling_forward pool_forward_;
  dnnl::pooling_backward pool_backward_;
  dt compute_type_;
  WeightsView kernel_;
  GradSink kernel_grad_, bias_grad_;
  dnnl::convolution_forward forward_;
  dnnl::convolution_backward_weights backward_weights_;
  dnnl::convolution_backward_data backward_data_;
  bool weights_from_f32_ = false;
  dnnl::reorder::primitive_desc widen_src_pd_, widen_dst_pd_;
  dnnl::reorder widen_src_, widen_dst_;  // bf16 -> float32 copies for the weight gradient
  // The input gradient as Winograd tiles plus a border (winograd_border.hpp), in place of backward_data_.
  std::optional<WinogradBorder> border_;
  std::vector<float> flipped_, taps_;  // the kernel as the two parts read it, refreshed when the weights change
  uint64_t flipped_version_ = ~uint64_t{0};  // the kernel's Param::version they were made from
  dnnl::memory flipped_oihw_, flipped_tiles_;
  Args flip_args_;
  dnnl::reorder flip_reorder_;
  dnnl::convolution_forward tiles_;
  NormLink* link_ = nullptr;  // to the batch norm that reads the output, where this layer offered it its chunks
  int64_t chunks_, examples_;
  size_t src_bytes_ = 0, dst_bytes_ = 0, pooled_bytes_ = 0, workspace_bytes_ = 0;  // one chunk's
  std::vector<dnnl::memory> kernel_parts_, bias_parts_;  // each chunk's weight gradient
  std::vector<Lane> lanes_;  // sized once: the builder keeps pointers to their argument maps
};

}  // namespace

std::unique_ptr<Layer> make_chunked_conv2d(const NodeSpec& node, LayerBuilder& b) {
  if (node.op != "conv2d" || b.input_count() != 1 || b.input(0).shape.size() != 3) return nullptr;
  const ConvGeometry g = conv_geometry(node, b.input(0).shape);
  PostActivation act(activation_spec(node.attr_string("activation", "linear"), node));
  const auto primitives = chunk_conv_primitives(node, b, g, act, b.compute_type());
  if (!primitives) return nullptr;
  return std::make_unique<ChunkedConv2D>(node, b, g, std::move(act), *primitives);
}

std::unique_ptr<Layer> make_conv2d_max_pool(const NodeSpec& node, LayerBuilder& b) {
  if (node.op != "conv2d" || !b.fused_pool() || b.input_count() != 1 || b.input(0).shape.size() != 3) return nullptr;
  const std::string activation = node.attr_string("activation", "linear");
  if (activation != "relu" && activation != "linear") return nullptr;  // only a relu commutes with the max
  const ConvGeometry g = conv_geometry(node, b.input(0).shape);
  const PostActivation linear(activation_spec("linear", node));  // a relu runs after the pool
  const auto primitives =
      chunk_conv_primitives(node, b, g, linear, float32_stem(g, b) ? dt::f32 : b.compute_type());
  if (!primitives) return nullptr;
  const auto pool = chunk_max_pool(*b.fused_pool(), b, Shape{g.OH, g.OW, g.F}, primitives->forward.dst_desc(),
                                   activation == "relu");
  if (!pool) return nullptr;
  return std::make_unique<ChunkedConv2D>(node, b, g, linear, *primitives, pool);
}

}  // namespace onednn
