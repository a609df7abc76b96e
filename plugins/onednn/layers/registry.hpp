// The ops this backend compiles, each with the factory that builds its layer. An explicit table: no static
// registration.
#pragma once

#include "../layer.hpp"

#include <string_view>

namespace onednn {

using LayerFactory = std::unique_ptr<Layer> (*)(const NodeSpec& node, LayerBuilder& builder);

// Null for ops this backend does not support.
LayerFactory find_layer(std::string_view op);
std::vector<std::string> supported_ops();

std::unique_ptr<Layer> make_conv2d(const NodeSpec&, LayerBuilder&);
// conv2d over chunks of the batch (conv2d_chunked.cpp) where that applies; null elsewhere.
std::unique_ptr<Layer> make_chunked_conv2d(const NodeSpec&, LayerBuilder&);
// conv2d and the max_pool that is its one reader (builder.fused_pool()) as one chunked layer, where that applies
// (conv2d_chunked.cpp, chunk_max_pool.hpp); null elsewhere, with the builder untouched.
std::unique_ptr<Layer> make_conv2d_max_pool(const NodeSpec&, LayerBuilder&);
std::unique_ptr<Layer> make_dense(const NodeSpec&, LayerBuilder&);
std::unique_ptr<Layer> make_max_pool(const NodeSpec&, LayerBuilder&);
std::unique_ptr<Layer> make_avg_pool(const NodeSpec&, LayerBuilder&);
std::unique_ptr<Layer> make_global_avg_pool(const NodeSpec&, LayerBuilder&);
std::unique_ptr<Layer> make_global_max_pool(const NodeSpec&, LayerBuilder&);
std::unique_ptr<Layer> make_flatten(const NodeSpec&, LayerBuilder&);
std::unique_ptr<Layer> make_reshape(const NodeSpec&, LayerBuilder&);
std::unique_ptr<Layer> make_activation(const NodeSpec&, LayerBuilder&);
std::unique_ptr<Layer> make_add(const NodeSpec&, LayerBuilder&);
std::unique_ptr<Layer> make_softmax(const NodeSpec&, LayerBuilder&);
std::unique_ptr<Layer> make_dropout(const NodeSpec&, LayerBuilder&);
std::unique_ptr<Layer> make_batch_norm(const NodeSpec&, LayerBuilder&);
std::unique_ptr<Layer> make_concat(const NodeSpec&, LayerBuilder&);
std::unique_ptr<Layer> make_dense_rows(const NodeSpec&, LayerBuilder&);
std::unique_ptr<Layer> make_embedding(const NodeSpec&, LayerBuilder&);
std::unique_ptr<Layer> make_position_embedding(const NodeSpec&, LayerBuilder&);
std::unique_ptr<Layer> make_layer_norm(const NodeSpec&, LayerBuilder&);
std::unique_ptr<Layer> make_rms_norm(const NodeSpec&, LayerBuilder&);
std::unique_ptr<Layer> make_multiply(const NodeSpec&, LayerBuilder&);
std::unique_ptr<Layer> make_subtract(const NodeSpec&, LayerBuilder&);
std::unique_ptr<Layer> make_transpose(const NodeSpec&, LayerBuilder&);
std::unique_ptr<Layer> make_matmul(const NodeSpec&, LayerBuilder&);
std::unique_ptr<Layer> make_multi_head_attention(const NodeSpec&, LayerBuilder&);
std::unique_ptr<Layer> make_conv2d_transpose(const NodeSpec&, LayerBuilder&);
std::unique_ptr<Layer> make_conv2d_transpose_taps(const NodeSpec&, LayerBuilder&, int64_t kh, int64_t kw);
std::unique_ptr<Layer> make_resize(const NodeSpec&, LayerBuilder&);
std::unique_ptr<Layer> make_zero_padding2d(const NodeSpec&, LayerBuilder&);
std::unique_ptr<Layer> make_cropping2d(const NodeSpec&, LayerBuilder&);
std::unique_ptr<Layer> make_depth_to_space(const NodeSpec&, LayerBuilder&);

}  // namespace onednn
