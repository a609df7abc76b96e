#include "../elementwise.hpp"
#include "../layer.hpp"
#include "cuda_check.hpp"

#include <utility>

namespace cuda_plugin {

std::unique_ptr<Layer> make_dense(const NodeSpec&, Build&);
std::unique_ptr<Layer> make_conv2d(const NodeSpec&, Build&);
std::unique_ptr<Layer> make_max_pool(const NodeSpec&, Build&);
std::unique_ptr<Layer> make_avg_pool(const NodeSpec&, Build&);
std::unique_ptr<Layer> make_global_max_pool(const NodeSpec&, Build&);
std::unique_ptr<Layer> make_global_avg_pool(const NodeSpec&, Build&);
std::unique_ptr<Layer> make_activation(const NodeSpec&, Build&);
std::unique_ptr<Layer> make_dropout(const NodeSpec&, Build&);
std::unique_ptr<Layer> make_add(const NodeSpec&, Build&);
std::unique_ptr<Layer> make_reshape(const NodeSpec&, Build&);
std::unique_ptr<Layer> make_layer_norm(const NodeSpec&, Build&);
std::unique_ptr<Layer> make_batch_norm(const NodeSpec&, Build&);
std::unique_ptr<Layer> make_multiply(const NodeSpec&, Build&);
std::unique_ptr<Layer> make_subtract(const NodeSpec&, Build&);
std::unique_ptr<Layer> make_softmax(const NodeSpec&, Build&);
std::unique_ptr<Layer> make_concat(const NodeSpec&, Build&);
std::unique_ptr<Layer> make_transpose(const NodeSpec&, Build&);
std::unique_ptr<Layer> make_zero_padding2d(const NodeSpec&, Build&);
std::unique_ptr<Layer> make_cropping2d(const NodeSpec&, Build&);
std::unique_ptr<Layer> make_depth_to_space(const NodeSpec&, Build&);
std::unique_ptr<Layer> make_resize(const NodeSpec&, Build&);
std::unique_ptr<Layer> make_conv2d_transpose(const NodeSpec&, Build&);
std::unique_ptr<Layer> make_embedding(const NodeSpec&, Build&);
std::unique_ptr<Layer> make_position_embedding(const NodeSpec&, Build&);
std::unique_ptr<Layer> make_rms_norm(const NodeSpec&, Build&);
std::unique_ptr<Layer> make_matmul(const NodeSpec&, Build&);
std::unique_ptr<Layer> make_multi_head_attention(const NodeSpec&, Build&);

namespace {

constexpr std::pair<std::string_view, LayerFactory> kLayers[] = {
    {"conv2d", &make_conv2d},
    {"dense", &make_dense},
    {"max_pool", &make_max_pool},
    {"avg_pool", &make_avg_pool},
    {"global_avg_pool", &make_global_avg_pool},
    {"global_max_pool", &make_global_max_pool},
    {"flatten", &make_reshape},
    {"reshape", &make_reshape},
    {"activation", &make_activation},
    {"add", &make_add},
    {"dropout", &make_dropout},
    {"layer_norm", &make_layer_norm},
    {"batch_norm", &make_batch_norm},
    {"multiply", &make_multiply},
    {"subtract", &make_subtract},
    {"softmax", &make_softmax},
    {"concat", &make_concat},
    {"transpose", &make_transpose},
    {"zero_padding2d", &make_zero_padding2d},
    {"cropping2d", &make_cropping2d},
    {"depth_to_space", &make_depth_to_space},
    {"resize", &make_resize},
    {"conv2d_transpose", &make_conv2d_transpose},
    {"conv1d", &make_conv2d},
    {"embedding", &make_embedding},
    {"position_embedding", &make_position_embedding},
    {"rms_norm", &make_rms_norm},
    {"matmul", &make_matmul},
    {"multi_head_attention", &make_multi_head_attention},
};

}  // namespace

LayerFactory find_layer(std::string_view op) { return ramjet::ir::find_op(kLayers, op); }

std::vector<std::string> supported_ops() { return ramjet::ir::op_names(kLayers); }

const Shape& Build::only_input(const NodeSpec& node, size_t rank, const char* what) const {
  if (inputs.size() != 1) node.fail(RAMJET_ERR_INVALID_ARGUMENT, node.op + " takes one input");
  const Shape& shape = inputs[0]->shape;
  if ((rank != 0 && shape.size() != rank) || shape.empty())
    node.fail(RAMJET_ERR_INVALID_ARGUMENT, node.op + " needs " + what + ", got " + ramjet::ir::shape_string(shape));
  return shape;
}

void Build::check_output(const NodeSpec& node, const Shape& shape) const {
  if (node.shape != shape)
    node.fail(RAMJET_ERR_INVALID_ARGUMENT, "the graph says the output is " + ramjet::ir::shape_string(node.shape) +
                                               ", the layer makes " + ramjet::ir::shape_string(shape));
}

void* gradient_slot(Value& v, Device& device, cudaDataType_t, const std::string& purpose) {
  if (!v.grad_written) return v.grad.get();
  if (v.spare.bytes() == 0) v.spare = Buffer(device, v.grad.bytes(), purpose + " (a second reader's part)");
  return v.spare.get();
}

void gradient_written(Value& v, Device& device, cudaDataType_t dtype) {
  if (v.grad_written) add_into(v.grad.get(), v.spare.get(), v.elements, dtype, device.stream());
  v.grad_written = true;
}

}  // namespace cuda_plugin
