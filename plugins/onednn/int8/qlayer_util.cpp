#include "qlayer_util.hpp"

#include <algorithm>
#include <cmath>

namespace onednn::int8 {

ClampRange activation_range(const NodeSpec& node, const ActivationQuant& out) {
  const std::string activation = node.attr_string("activation", "linear");
  ClampRange r;
  if (activation == "linear") return r;
  if (activation != "relu" && activation != "relu6")
    node.fail(RAMJET_ERR_UNSUPPORTED, "fused activation '" + activation + "' has no int8 form (linear, relu, relu6)");
  r.lo = std::max(-128, out.zero_point);
  if (activation == "relu6")
    r.hi = std::min<int32_t>(127, out.zero_point + static_cast<int32_t>(std::round(6.0f / out.scale)));
  return r;
}

QValue& only_input(const NodeSpec& node, QBuilder& b) {
  if (node.inputs.size() != 1) node.fail(RAMJET_ERR_INVALID_ARGUMENT, node.op + " takes one input");
  return b.value(node.inputs[0]);
}

const ActivationQuant& output_quant(const NodeSpec& node, const QBuilder& b) {
  return b.quant().activation(node.name);
}

void check_output_shape(const NodeSpec& node, const Shape& shape) {
  if (node.shape != shape)
    node.fail(RAMJET_ERR_INVALID_ARGUMENT, "the output shape is " + shape_string(shape) + ", the graph says " +
                                               shape_string(node.shape));
}

const ActivationQuant& same_quant(const NodeSpec& node, const QBuilder& b, const QValue& in) {
  const ActivationQuant& out = output_quant(node, b);
  if (!out.same_as(in.quant))
    node.fail(RAMJET_ERR_INVALID_ARGUMENT, "its output's scale and zero point must equal its input's ('" + in.name + "')");
  return out;
}

const QParam* checked_param(const NodeSpec& node, const QBuilder& b, const char* role, bool int8, const Shape& shape,
                            bool required) {
  if (!required && !node.params.count(role)) return nullptr;
  const QParam& p = b.params().get(node.param(role));
  const char* wanted = int8 ? "int8" : "int32";
  if (p.dtype.bits != (int8 ? 8 : 32))
    node.fail(RAMJET_ERR_INVALID_ARGUMENT, std::string("parameter '") + p.name + "' must be " + wanted);
  if (p.shape != shape)
    node.fail(RAMJET_ERR_INVALID_ARGUMENT, "parameter '" + p.name + "' has shape " + shape_string(p.shape) +
                                               "; it must be " + shape_string(shape));
  return &p;
}

std::vector<float> output_scales(const NodeSpec& node, const QBuilder& b, const ActivationQuant& in,
                                 const ActivationQuant& out, int64_t channels) {
  const WeightQuant& w = b.quant().weight(node.param("kernel"));
  if (w.scale.size() != 1 && static_cast<int64_t>(w.scale.size()) != channels)
    node.fail(RAMJET_ERR_INVALID_ARGUMENT, "the kernel has " + std::to_string(w.scale.size()) + " scales; it needs 1 or " +
                                               std::to_string(channels) + " (one per output channel)");
  std::vector<float> scales;
  for (float s : w.scale)
    scales.push_back(static_cast<float>(static_cast<double>(in.scale) * s / out.scale));
  return scales;
}

OwnKernelRequant own_kernel_requant(const NodeSpec& node, const QBuilder& b, const ActivationQuant& in,
                                    int64_t channels) {
  OwnKernelRequant r;
  r.kernel = node.param("kernel");
  if (node.params.count("bias")) r.bias = node.param("bias");
  const ActivationQuant& out = output_quant(node, b);
  r.scales = output_scales(node, b, in, out, channels);
  r.zp_in = in.zp_u8();
  r.zp_out = out.zp_u8();
  const ClampRange clamp = activation_range(node, out);
  r.lo = static_cast<float>(std::max(0, clamp.lo + 128));
  r.hi = static_cast<float>(std::min(255, clamp.hi + 128));
  return r;
}

}  // namespace onednn::int8
