#include "tflite_writer.hpp"

#include "qgraph.hpp"

#include <schema_generated.h>

#include <algorithm>
#include <cstring>

namespace tflite_plugin {
namespace {

namespace tfl = ::tflite;
using flatbuffers::Offset;

[[noreturn]] void fail(const std::string& message) {
  throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, "tflite exporter: " + message);
}

std::vector<int32_t> to_int32(const Shape& shape) { return std::vector<int32_t>(shape.begin(), shape.end()); }

std::pair<int64_t, int64_t> pair_attr(const json& node, const char* key, int64_t fallback) {
  const json& attrs = node.at("attrs");
  if (!attrs.contains(key)) return {fallback, fallback};
  const auto v = attrs.at(key).get<std::vector<int64_t>>();
  if (v.size() != 2) fail(describe(node) + ": attribute '" + key + "' must have two values");
  return {v[0], v[1]};
}

tfl::ActivationFunctionType fused_activation(const json& node) {
  const std::string a = activation_of(node);
  if (a == "linear") return tfl::ActivationFunctionType_NONE;
  if (a == "relu") return tfl::ActivationFunctionType_RELU;
  if (a == "relu6") return tfl::ActivationFunctionType_RELU6;
  fail(describe(node) + ": activation '" + a + "' cannot be fused in TFLite (NONE, RELU, RELU6)");
}

// TFLite knows only SAME and VALID; the IR carries explicit [top, bottom, left, right] padding.
tfl::Padding padding_of(const json& node, const Shape& in, std::pair<int64_t, int64_t> kernel,
                        std::pair<int64_t, int64_t> strides, std::pair<int64_t, int64_t> dilation) {
  std::vector<int64_t> pads = node.at("attrs").value("padding", std::vector<int64_t>{0, 0, 0, 0});
  if (pads.size() != 4) fail(describe(node) + ": padding must be [top, bottom, left, right]");
  if (std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; })) return tfl::Padding_VALID;
  auto same = [](int64_t size, int64_t k, int64_t s, int64_t d) {
    const int64_t out = (size + s - 1) / s;
    const int64_t total = std::max<int64_t>((out - 1) * s + (k - 1) * d + 1 - size, 0);
    return std::pair<int64_t, int64_t>{total / 2, total - total / 2};
  };
  const auto h = same(in[0], kernel.first, strides.first, dilation.first);
  const auto w = same(in[1], kernel.second, strides.second, dilation.second);
  if (pads == std::vector<int64_t>{h.first, h.second, w.first, w.second}) return tfl::Padding_SAME;
  fail(describe(node) + ": padding " + shape_text(pads) + " is neither SAME " +
       shape_text({h.first, h.second, w.first, w.second}) + " nor VALID, which is all TFLite can express");
}

class ModelWriter {
 public:
  ModelWriter(const json& qgraph, ramjet::Example& params) : graph_(qgraph), params_(params) {
    const json& q = graph_.at("quantization");
    const std::string mode = q.value("mode", std::string("?"));
    if (mode != "full_integer" && mode != "dynamic_range")
      fail("quantization mode '" + mode + "' cannot be exported (full_integer, dynamic_range)");
    float_activations_ = mode == "dynamic_range";
    input_type_ = q.value("input_type", std::string(float_activations_ ? "float32" : "int8"));
    output_type_ = q.value("output_type", std::string(float_activations_ ? "float32" : "int8"));
    // Dynamic range keeps every activation float32: there are no activation parameters for another interface.
    if (float_activations_ && (input_type_ != "float32" || output_type_ != "float32"))
      fail("a dynamic_range qgraph has a float32 interface only (input_type '" + input_type_ + "', output_type '" +
           output_type_ + "')");
    buffers_.push_back(tfl::CreateBuffer(fbb_));  // buffer 0: the empty sentinel
  }

  std::string build() {
    for (const auto& input : graph_.at("inputs")) add_input(input);
    for (const auto& node : graph_.at("nodes")) add_node(node);
    for (const auto& output : graph_.at("outputs")) add_output(output.get<std::string>());
    return finish();
  }

 private:
  // ---- tables -------------------------------------------------------------------------------------------

  uint32_t add_buffer(const void* data, size_t size) {
    fbb_.ForceVectorAlignment(size, sizeof(uint8_t), 16);  // the schema's force_align: 16 on Buffer.data
    auto bytes = fbb_.CreateVector(static_cast<const uint8_t*>(data), size);
    buffers_.push_back(tfl::CreateBuffer(fbb_, bytes));
    return static_cast<uint32_t>(buffers_.size() - 1);
  }

  Offset<tfl::QuantizationParameters> quantization(const TensorQuant& q, int32_t dimension, int64_t zp_shift = 0) {
    std::vector<int64_t> zero_points = q.zero_point;
    for (auto& z : zero_points) z += zp_shift;
    return tfl::CreateQuantizationParametersDirect(fbb_, nullptr, nullptr, &q.scale, &zero_points,
                                                   tfl::QuantizationDetails_NONE, 0, dimension);
  }

  int32_t add_tensor(const std::string& name, const Shape& shape, tfl::TensorType type, uint32_t buffer,
                     Offset<tfl::QuantizationParameters> quant, bool dynamic_batch) {
    const std::vector<int32_t> dims = to_int32(shape);
    std::vector<int32_t> signature = dims;
    if (dynamic_batch) signature[0] = -1;
    tensors_.push_back(tfl::CreateTensorDirect(fbb_, &dims, type, buffer, name.c_str(), quant, false, 0,
                                               dynamic_batch ? &signature : nullptr, true));
    return static_cast<int32_t>(tensors_.size() - 1);
  }

  // An activation tensor: batch 1 in the shape, -1 in the signature (LiteRT resizes).
  int32_t add_activation(const std::string& name, const Shape& per_example, tfl::TensorType type, const TensorQuant* q,
                         int64_t zp_shift = 0) {
    Shape shape{1};
    shape.insert(shape.end(), per_example.begin(), per_example.end());
    return add_tensor(name, shape, type, 0, q ? quantization(*q, 0, zp_shift) : 0, true);
  }

  // The tensor a graph value lives in: int8 with its parameters (full integer), or float32 (dynamic range).
  int32_t add_value_tensor(const std::string& name, const Shape& per_example, const std::string& quant_name) {
    if (float_activations_) return add_activation(name, per_example, tfl::TensorType_FLOAT32, nullptr);
    const TensorQuant q = quant_of(quant_name);
    return add_activation(name, per_example, tfl::TensorType_INT8, &q);
  }

  // Element-wise and pooling ops: version 2 is their int8 kernel, version 1 the float one.
  int32_t plain_op_version() const { return float_activations_ ? 1 : 2; }

  uint32_t opcode(tfl::BuiltinOperator op, int32_t version) {
    for (size_t i = 0; i < opcodes_.size(); ++i)
      if (opcodes_[i].first == op && opcodes_[i].second == version) return static_cast<uint32_t>(i);
    opcodes_.emplace_back(op, version);
    return static_cast<uint32_t>(opcodes_.size() - 1);
  }

  void add_op(tfl::BuiltinOperator op, int32_t version, const std::vector<int32_t>& inputs,
              const std::vector<int32_t>& outputs, tfl::BuiltinOptions options_type = tfl::BuiltinOptions_NONE,
              Offset<void> options = 0) {
    const uint32_t code = opcode(op, version);
    auto in = fbb_.CreateVector(inputs);
    auto out = fbb_.CreateVector(outputs);
    operators_.push_back(tfl::CreateOperator(fbb_, code, in, out, options_type, options));
  }

  // ---- graph values ---------------------------------------------------------------------------------------

  TensorQuant quant_of(const std::string& name) const {
    const json& tensors = graph_.at("quantization").at("tensors");
    if (!tensors.contains(name)) fail("the qgraph has no quantization parameters for tensor '" + name + "'");
    return TensorQuant::from_json(tensors.at(name), name);
  }

  int32_t value(const json& node, size_t i) const {
    const std::string name = node.at("inputs").at(i);
    auto it = values_.find(name);
    if (it == values_.end()) fail(describe(node) + ": input '" + name + "' is not produced before it");
    return it->second;
  }
  const Shape& shape_of(const std::string& name) const { return shapes_.at(name); }

  // The tensor a node writes: int8 (suffixed when a conversion to the file's output type follows it), or float32
  // in dynamic range, where the interface needs no conversion.
  int32_t node_output(const json& node) {
    const std::string name = node.at("name");
    const bool converted = !float_activations_ && is_graph_output(graph_, name) && output_type_ != "int8";
    const Shape shape = node.at("shape").get<Shape>();
    const int32_t t = add_value_tensor(converted ? name + "/int8" : name, shape, name);
    values_[name] = t;
    shapes_[name] = shape;
    return t;
  }

  template <class T>
  const T* param_data(const std::string& name, const json& node, size_t count) {
    DLTensor* t = params_.find(name);
    if (t == nullptr) fail(describe(node) + ": parameter '" + name + "' is missing");
    if (!ramjet::same_dtype(t->dtype, ramjet::dtype_of<T>()) || !ramjet::is_contiguous(*t) ||
        ramjet::element_count(*t) != static_cast<int64_t>(count))
      fail(describe(node) + ": parameter '" + name + "' must be a contiguous " + ramjet::dtype_name(ramjet::dtype_of<T>()) +
           " tensor of " + std::to_string(count) + " values");
    return ramjet::data_as<T>(*t);
  }

  // int32 in full integer; float32 in dynamic range, where a node without a bias gets `<node>/bias` of zeros (the
  // contract's rule for full integer too, and the hybrid kernels' usual three inputs).
  int32_t bias_tensor(const json& node, int64_t channels) {
    if (float_activations_) return float_bias_tensor(node, channels);
    const std::string name = node.at("params").at("bias");
    const TensorQuant q = quant_of(name);
    if (q.dtype != "int32") fail(describe(node) + ": bias '" + name + "' must be int32");
    const int32_t* data = param_data<int32_t>(name, node, static_cast<size_t>(channels));
    const uint32_t buffer = add_buffer(data, static_cast<size_t>(channels) * sizeof(int32_t));
    return add_tensor(name, {channels}, tfl::TensorType_INT32, buffer, quantization(q, 0), false);
  }

  int32_t float_bias_tensor(const json& node, int64_t channels) {
    std::vector<float> values(static_cast<size_t>(channels), 0.0f);
    std::string name = node.at("name").get<std::string>() + "/bias";
    if (node.contains("params") && node.at("params").contains("bias")) {
      name = node.at("params").at("bias");
      const float* data = param_data<float>(name, node, values.size());
      std::copy(data, data + channels, values.begin());
    }
    const uint32_t buffer = add_buffer(values.data(), values.size() * sizeof(float));
    return add_tensor(name, {channels}, tfl::TensorType_FLOAT32, buffer, 0, false);
  }

  int32_t int32_constant(const std::string& name, const std::vector<int32_t>& values) {
    const uint32_t buffer = add_buffer(values.data(), values.size() * sizeof(int32_t));
    return add_tensor(name, {static_cast<int64_t>(values.size())}, tfl::TensorType_INT32, buffer, 0, false);
  }

  // ---- edges ----------------------------------------------------------------------------------------------

  void add_input(const json& input) {
    const std::string name = input.at("name");
    const Shape shape = input.at("shape").get<Shape>();
    shapes_[name] = shape;
    if (float_activations_) {
      values_[name] = add_activation(name, shape, tfl::TensorType_FLOAT32, nullptr);
      inputs_.push_back(values_[name]);
      return;
    }
    const TensorQuant q = quant_of(name);
    if (input_type_ == "int8") {
      values_[name] = add_activation(name, shape, tfl::TensorType_INT8, &q);
      inputs_.push_back(values_[name]);
      return;
    }
    const int32_t outer = input_type_ == "uint8" ? add_activation(name, shape, tfl::TensorType_UINT8, &q, 128)
                                                 : add_activation(name, shape, tfl::TensorType_FLOAT32, nullptr);
    const int32_t inner = add_activation(name + "/int8", shape, tfl::TensorType_INT8, &q);
    add_op(tfl::BuiltinOperator_QUANTIZE, 2, {outer}, {inner}, tfl::BuiltinOptions_QuantizeOptions,
           tfl::CreateQuantizeOptions(fbb_).Union());
    inputs_.push_back(outer);
    values_[name] = inner;
  }

  void add_output(const std::string& name) {
    auto it = values_.find(name);
    if (it == values_.end()) fail("graph output '" + name + "' is not produced by any node");
    if (float_activations_ || output_type_ == "int8") {
      outputs_.push_back(it->second);
      return;
    }
    const TensorQuant q = quant_of(name);
    if (output_type_ == "uint8") {
      const int32_t outer = add_activation(name, shape_of(name), tfl::TensorType_UINT8, &q, 128);
      add_op(tfl::BuiltinOperator_QUANTIZE, 2, {it->second}, {outer}, tfl::BuiltinOptions_QuantizeOptions,
             tfl::CreateQuantizeOptions(fbb_).Union());
      outputs_.push_back(outer);
    } else {
      const int32_t outer = add_activation(name, shape_of(name), tfl::TensorType_FLOAT32, nullptr);
      add_op(tfl::BuiltinOperator_DEQUANTIZE, 2, {it->second}, {outer}, tfl::BuiltinOptions_DequantizeOptions,
             tfl::CreateDequantizeOptions(fbb_).Union());
      outputs_.push_back(outer);
    }
  }

  // ---- nodes ----------------------------------------------------------------------------------------------

  void add_node(const json& node) {
    const std::string op = node.at("op");
    if (op == "conv2d") conv2d(node);
    else if (op == "dense") dense(node);
    else if (op == "max_pool" || op == "avg_pool") pool(node);
    else if (op == "global_avg_pool" || op == "global_max_pool") global_pool(node);
    else if (op == "flatten" || op == "reshape") reshape(node);
    else if (op == "softmax") softmax(node);
    else if (op == "add") add(node);
    else if (op == "concat") concat(node);
    else if (op == "activation") activation(node);
    else fail(describe(node) + (float_activations_ ? " has no TFLite form here" : " has no TFLite int8 form"));
  }

  void conv2d(const json& node) {
    const std::string input = node.at("inputs").at(0);
    const Shape& in = shape_of(input);
    const std::string kernel_name = node.at("params").at("kernel");
    const Shape k = graph_.at("params").at(kernel_name).at("shape").get<Shape>();  // [kh, kw, in/groups, out]
    const int64_t groups = node.at("attrs").value("groups", int64_t{1});
    const bool depthwise = groups > 1 && groups == in.at(2) && k[2] == 1;
    if (groups > 1 && !depthwise)
      fail(describe(node) + ": grouped convolution (groups=" + std::to_string(groups) + ") has no TFLite form");
    const TensorQuant kq = kernel_quant(node, kernel_name);
    if (kq.scale.size() > 1 && kq.axis != 3) fail(describe(node) + ": per-channel kernel scales must be on IR axis 3");
    const int8_t* w = param_data<int8_t>(kernel_name, node, static_cast<size_t>(product(k)));
    const int64_t kh = k[0], kw = k[1], ci = k[2], co = k[3];
    int32_t weights;
    if (depthwise) {  // [kh, kw, 1, C·m] has the same memory order as TFLite's [1, kh, kw, C·m]
      const uint32_t buffer = add_buffer(w, static_cast<size_t>(product(k)));
      weights = add_tensor(kernel_name, {1, kh, kw, co}, tfl::TensorType_INT8, buffer, quantization(kq, 3), false);
    } else {  // HWIO → OHWI
      std::vector<int8_t> ohwi(static_cast<size_t>(product(k)));
      for (int64_t h = 0; h < kh; ++h)
        for (int64_t x = 0; x < kw; ++x)
          for (int64_t i = 0; i < ci; ++i)
            for (int64_t o = 0; o < co; ++o)
              ohwi[static_cast<size_t>(((o * kh + h) * kw + x) * ci + i)] = w[((h * kw + x) * ci + i) * co + o];
      const uint32_t buffer = add_buffer(ohwi.data(), ohwi.size());
      weights = add_tensor(kernel_name, {co, kh, kw, ci}, tfl::TensorType_INT8, buffer, quantization(kq, 0), false);
    }
    const int32_t bias = bias_tensor(node, co);
    const int32_t x = value(node, 0);
    const auto strides = pair_attr(node, "strides", 1), dilation = pair_attr(node, "dilation", 1);
    const tfl::Padding padding = padding_of(node, in, {kh, kw}, strides, dilation);
    const auto act = fused_activation(node);
    const int32_t y = node_output(node);
    const auto sh = static_cast<int32_t>(strides.first), sw = static_cast<int32_t>(strides.second);
    const auto dh = static_cast<int32_t>(dilation.first), dw = static_cast<int32_t>(dilation.second);
    // Hybrid kernels (float input, int8 weights) have versions of their own: per channel 6 (depthwise) and 5
    // (conv), per tensor 4 and 2 (TFLite's op version table, which calls it per channel when there is one scale
    // per output channel). The per-channel conv hybrid kernel quantizes its input asymmetrically by itself;
    // Conv2DOptions has no field for it.
    const bool per_channel = static_cast<int64_t>(kq.scale.size()) == co;
    if (depthwise) {
      const int32_t version = float_activations_ ? (per_channel ? 6 : 4) : 3;
      const auto options = tfl::CreateDepthwiseConv2DOptions(fbb_, padding, sw, sh, static_cast<int32_t>(co / in[2]), act, dw, dh);
      add_op(tfl::BuiltinOperator_DEPTHWISE_CONV_2D, version, {x, weights, bias}, {y},
             tfl::BuiltinOptions_DepthwiseConv2DOptions, options.Union());
    } else {
      const int32_t version = float_activations_ ? (per_channel ? 5 : 2) : 3;
      const auto options = tfl::CreateConv2DOptions(fbb_, padding, sw, sh, act, dw, dh);
      add_op(tfl::BuiltinOperator_CONV_2D, version, {x, weights, bias}, {y}, tfl::BuiltinOptions_Conv2DOptions, options.Union());
    }
  }

  void dense(const json& node) {
    const std::string kernel_name = node.at("params").at("kernel");
    const Shape k = graph_.at("params").at(kernel_name).at("shape").get<Shape>();  // [in, out]
    const TensorQuant kq = kernel_quant(node, kernel_name);
    if (kq.scale.size() != 1) fail(describe(node) + ": FullyConnected weights must be quantized per tensor");
    const int8_t* w = param_data<int8_t>(kernel_name, node, static_cast<size_t>(product(k)));
    const int64_t in = k[0], out = k[1];
    std::vector<int8_t> transposed(static_cast<size_t>(in * out));  // [in, out] → [out, in]
    for (int64_t i = 0; i < in; ++i)
      for (int64_t o = 0; o < out; ++o) transposed[static_cast<size_t>(o * in + i)] = w[i * out + o];
    const uint32_t buffer = add_buffer(transposed.data(), transposed.size());
    const int32_t weights = add_tensor(kernel_name, {out, in}, tfl::TensorType_INT8, buffer, quantization(kq, 0), false);
    const int32_t bias = bias_tensor(node, out);
    const int32_t x = value(node, 0);
    const auto act = fused_activation(node);
    const int32_t y = node_output(node);
    // Hybrid: quantize each input row asymmetrically (as TensorFlow's converter asks; after a relu a symmetric
    // scale would waste half the int8 range), FULLY_CONNECTED version 9 for that scheme.
    const auto options = tfl::CreateFullyConnectedOptions(fbb_, act, tfl::FullyConnectedOptionsWeightsFormat_DEFAULT,
                                                          false, float_activations_);
    add_op(tfl::BuiltinOperator_FULLY_CONNECTED, float_activations_ ? 9 : 4, {x, weights, bias}, {y},
           tfl::BuiltinOptions_FullyConnectedOptions, options.Union());
  }

  TensorQuant kernel_quant(const json& node, const std::string& kernel_name) const {
    TensorQuant q = quant_of(kernel_name);
    if (q.dtype != "int8") fail(describe(node) + ": kernel '" + kernel_name + "' must be int8");
    return q;
  }

  void pool(const json& node) {
    const Shape& in = shape_of(node.at("inputs").at(0));
    const auto window = pair_attr(node, "pool", 2);
    const auto strides = pair_attr(node, "strides", window.first);
    const tfl::Padding padding = padding_of(node, in, window, strides, {1, 1});
    const int32_t x = value(node, 0);
    const int32_t y = node_output(node);
    const auto options = tfl::CreatePool2DOptions(fbb_, padding, static_cast<int32_t>(strides.second),
                                                  static_cast<int32_t>(strides.first), static_cast<int32_t>(window.second),
                                                  static_cast<int32_t>(window.first));
    const bool max = node.at("op") == "max_pool";
    add_op(max ? tfl::BuiltinOperator_MAX_POOL_2D : tfl::BuiltinOperator_AVERAGE_POOL_2D, plain_op_version(), {x}, {y},
           tfl::BuiltinOptions_Pool2DOptions, options.Union());
  }

  // A pool over the whole H×W window to [1, 1, 1, C], then a reshape to [1, C]: both keep their input's
  // parameters, as the contract asks, and every reader of the file knows both ops.
  void global_pool(const json& node) {
    const std::string name = node.at("name");
    const Shape& in = shape_of(node.at("inputs").at(0));
    if (in.size() != 3) fail(describe(node) + ": needs an [H, W, C] input, got " + shape_text(in));
    const int32_t x = value(node, 0);
    const int32_t pooled = add_value_tensor(name + "/pool", {1, 1, in[2]}, name);
    const auto h = static_cast<int32_t>(in[0]), w = static_cast<int32_t>(in[1]);
    const auto options = tfl::CreatePool2DOptions(fbb_, tfl::Padding_VALID, 1, 1, w, h);
    const bool max = node.at("op") == "global_max_pool";
    add_op(max ? tfl::BuiltinOperator_MAX_POOL_2D : tfl::BuiltinOperator_AVERAGE_POOL_2D, plain_op_version(), {x},
           {pooled}, tfl::BuiltinOptions_Pool2DOptions, options.Union());
    reshape_to(node, pooled, node.at("shape").get<Shape>());
  }

  void reshape(const json& node) { reshape_to(node, value(node, 0), node.at("shape").get<Shape>()); }

  void reshape_to(const json& node, int32_t x, const Shape& per_example) {
    std::vector<int32_t> new_shape{-1};
    for (int64_t d : per_example) new_shape.push_back(static_cast<int32_t>(d));
    const int32_t shape = int32_constant(node.at("name").get<std::string>() + "/shape", new_shape);
    const int32_t y = node_output(node);
    // new_shape in the options too: older readers (Arm NN 20.08) take it from there.
    const auto options = tfl::CreateReshapeOptionsDirect(fbb_, &new_shape);
    add_op(tfl::BuiltinOperator_RESHAPE, 1, {x, shape}, {y}, tfl::BuiltinOptions_ReshapeOptions, options.Union());
  }

  void softmax(const json& node) {
    const int32_t x = value(node, 0);
    const int32_t y = node_output(node);
    add_op(tfl::BuiltinOperator_SOFTMAX, plain_op_version(), {x}, {y}, tfl::BuiltinOptions_SoftmaxOptions,
           tfl::CreateSoftmaxOptions(fbb_, 1.0f).Union());
  }

  void add(const json& node) {
    if (node.at("inputs").size() != 2) fail(describe(node) + ": TFLite ADD takes exactly two inputs");
    const int32_t a = value(node, 0), b = value(node, 1);
    const auto act = fused_activation(node);
    const int32_t y = node_output(node);
    add_op(tfl::BuiltinOperator_ADD, plain_op_version(), {a, b}, {y}, tfl::BuiltinOptions_AddOptions,
           tfl::CreateAddOptions(fbb_, act).Union());
  }

  // TFLite's int8 CONCATENATION wants every input on the output's parameters: requantize the others first (float
  // inputs in dynamic range go in as they are).
  void concat(const json& node) {
    const std::string name = node.at("name");
    const Shape shape = node.at("shape").get<Shape>();
    const auto options = tfl::CreateConcatenationOptions(fbb_, static_cast<int32_t>(shape.size()));  // last axis, batch included
    if (float_activations_) {
      std::vector<int32_t> inputs;
      for (size_t i = 0; i < node.at("inputs").size(); ++i) inputs.push_back(value(node, i));
      const int32_t y = node_output(node);
      add_op(tfl::BuiltinOperator_CONCATENATION, 1, inputs, {y}, tfl::BuiltinOptions_ConcatenationOptions, options.Union());
      return;
    }
    const TensorQuant out_q = quant_of(name);
    std::vector<int32_t> inputs;
    for (size_t i = 0; i < node.at("inputs").size(); ++i) {
      const std::string input = node["inputs"][i];
      const TensorQuant in_q = quant_of(input);
      int32_t t = value(node, i);
      if (in_q.scale != out_q.scale || in_q.zero_point != out_q.zero_point) {
        const int32_t requantized = add_activation(input + "/requantized_for/" + name, shape_of(input), tfl::TensorType_INT8, &out_q);
        add_op(tfl::BuiltinOperator_QUANTIZE, 2, {t}, {requantized}, tfl::BuiltinOptions_QuantizeOptions,
               tfl::CreateQuantizeOptions(fbb_).Union());
        t = requantized;
      }
      inputs.push_back(t);
    }
    const int32_t y = node_output(node);
    add_op(tfl::BuiltinOperator_CONCATENATION, 2, inputs, {y}, tfl::BuiltinOptions_ConcatenationOptions, options.Union());
  }

  void activation(const json& node) {
    const std::string a = activation_of(node);
    if (a != "relu" && a != "relu6") fail(describe(node) + ": activation '" + a + "' has no TFLite form here");
    const int32_t x = value(node, 0);
    const int32_t y = node_output(node);
    add_op(a == "relu" ? tfl::BuiltinOperator_RELU : tfl::BuiltinOperator_RELU6, plain_op_version(), {x}, {y});
  }

  // ---- the model ------------------------------------------------------------------------------------------

  std::string finish() {
    const std::string qgraph_text = graph_.dump();
    const uint32_t metadata_buffer = add_buffer(qgraph_text.data(), qgraph_text.size());
    std::vector<Offset<tfl::OperatorCode>> codes;
    for (const auto& [op, version] : opcodes_) {
      // deprecated_builtin_code is an int8: codes past 127 go in builtin_code with the placeholder here.
      const auto deprecated = static_cast<int8_t>(std::min<int32_t>(op, tfl::BuiltinOperator_PLACEHOLDER_FOR_GREATER_OP_CODES));
      codes.push_back(tfl::CreateOperatorCode(fbb_, deprecated, 0, version, op));
    }
    std::vector<Offset<tfl::SubGraph>> subgraphs{
        tfl::CreateSubGraphDirect(fbb_, &tensors_, &inputs_, &outputs_, &operators_, "main")};
    std::vector<Offset<tfl::Metadata>> metadata{tfl::CreateMetadataDirect(fbb_, "ramjet_qgraph", metadata_buffer)};
    const char* description = float_activations_ ? "ramjet dynamic-range int8 export" : "ramjet int8 export";
    const auto model = tfl::CreateModelDirect(fbb_, 3, &codes, &subgraphs, description, &buffers_, nullptr, &metadata);
    tfl::FinishModelBuffer(fbb_, model);
    flatbuffers::Verifier verifier(fbb_.GetBufferPointer(), fbb_.GetSize());
    if (!tfl::VerifyModelBuffer(verifier))
      throw ramjet::Error(RAMJET_ERR_INTERNAL, "tflite exporter: the built model does not verify against the schema");
    return std::string(reinterpret_cast<const char*>(fbb_.GetBufferPointer()), fbb_.GetSize());
  }

  const json& graph_;
  ramjet::Example& params_;
  bool float_activations_ = false;  // dynamic range: float32 activations, int8 conv/dense weights only
  std::string input_type_, output_type_;
  flatbuffers::FlatBufferBuilder fbb_{1 << 16};
  std::vector<Offset<tfl::Buffer>> buffers_;
  std::vector<Offset<tfl::Tensor>> tensors_;
  std::vector<Offset<tfl::Operator>> operators_;
  std::vector<std::pair<tfl::BuiltinOperator, int32_t>> opcodes_;
  std::vector<int32_t> inputs_, outputs_;
  std::map<std::string, int32_t> values_;  // graph value → the tensor it lives in
  std::map<std::string, Shape> shapes_;    // graph value → per-example shape
};

}  // namespace

std::string build_tflite_model(const json& qgraph, ramjet::Example& params) {
  try {
    return ModelWriter(qgraph, params).build();
  } catch (const json::exception& e) {
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, std::string("tflite exporter: malformed qgraph: ") + e.what());
  }
}

}  // namespace tflite_plugin
