#include "registry.hpp"

#include <utility>

namespace onednn {
namespace {

constexpr std::pair<std::string_view, LayerFactory> kLayers[] = {
    {"conv2d", &make_conv2d},
    {"dense", &make_dense},
    {"max_pool", &make_max_pool},
    {"avg_pool", &make_avg_pool},
    {"global_avg_pool", &make_global_avg_pool},
    {"global_max_pool", &make_global_max_pool},
    {"flatten", &make_flatten},
    {"reshape", &make_reshape},
    {"activation", &make_activation},
    {"add", &make_add},
    {"softmax", &make_softmax},
    {"dropout", &make_dropout},
    {"batch_norm", &make_batch_norm},
    {"concat", &make_concat},
    {"conv1d", &make_conv2d},
    {"embedding", &make_embedding},
    {"position_embedding", &make_position_embedding},
    {"layer_norm", &make_layer_norm},
    {"rms_norm", &make_rms_norm},
    {"multiply", &make_multiply},
    {"subtract", &make_subtract},
    {"transpose", &make_transpose},
    {"matmul", &make_matmul},
    {"multi_head_attention", &make_multi_head_attention},
    {"conv2d_transpose", &make_conv2d_transpose},
    {"resize", &make_resize},
    {"zero_padding2d", &make_zero_padding2d},
    {"cropping2d", &make_cropping2d},
    {"depth_to_space", &make_depth_to_space},
};

}  // namespace

LayerFactory find_layer(std::string_view op) { return ramjet::ir::find_op(kLayers, op); }

std::vector<std::string> supported_ops() { return ramjet::ir::op_names(kLayers); }

}  // namespace onednn
