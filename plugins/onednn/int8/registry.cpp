// The ops with an int8 form, each built by the file named beside it.
#include "qplan.hpp"

#include <map>

namespace onednn::int8 {

void build_conv2d(const NodeSpec&, QBuilder&);           // weighted.cpp
void build_dense(const NodeSpec&, QBuilder&);            // weighted.cpp
void build_max_pool(const NodeSpec&, QBuilder&);         // pooling.cpp
void build_global_max_pool(const NodeSpec&, QBuilder&);  // pooling.cpp
void build_avg_pool(const NodeSpec&, QBuilder&);         // pooling.cpp
void build_global_avg_pool(const NodeSpec&, QBuilder&);  // pooling.cpp
void build_flatten(const NodeSpec&, QBuilder&);          // shape_ops.cpp
void build_reshape(const NodeSpec&, QBuilder&);          // shape_ops.cpp
void build_concat(const NodeSpec&, QBuilder&);           // shape_ops.cpp
void build_conv2d_transpose(const NodeSpec&, QBuilder&); // transpose_conv.cpp
void build_resize(const NodeSpec&, QBuilder&);           // image_ops.cpp
void build_zero_padding2d(const NodeSpec&, QBuilder&);   // image_ops.cpp
void build_cropping2d(const NodeSpec&, QBuilder&);       // image_ops.cpp
void build_depth_to_space(const NodeSpec&, QBuilder&);   // image_ops.cpp
void build_add(const NodeSpec&, QBuilder&);              // elementwise.cpp
void build_activation(const NodeSpec&, QBuilder&);       // elementwise.cpp
void build_softmax(const NodeSpec&, QBuilder&);          // elementwise.cpp

QLayerFactory find_qlayer(const std::string& op) {
  static const std::map<std::string, QLayerFactory> factories = {
      {"conv2d", &build_conv2d},         {"dense", &build_dense},
      {"max_pool", &build_max_pool},     {"global_max_pool", &build_global_max_pool},
      {"avg_pool", &build_avg_pool},     {"global_avg_pool", &build_global_avg_pool},
      {"flatten", &build_flatten},       {"reshape", &build_reshape},
      {"concat", &build_concat},         {"add", &build_add},
      {"activation", &build_activation}, {"softmax", &build_softmax},
      {"conv2d_transpose", &build_conv2d_transpose},
      {"resize", &build_resize},         {"zero_padding2d", &build_zero_padding2d},
      {"cropping2d", &build_cropping2d}, {"depth_to_space", &build_depth_to_space}};
  const auto it = factories.find(op);
  return it == factories.end() ? nullptr : it->second;
}

}  // namespace onednn::int8
