#include "quantizer.hpp"

#include "qgraph.hpp"
#include "rewrite.hpp"
#include "weights.hpp"


namespace tflite_plugin {
namespace {

const std::vector<std::string> kInterfaceTypes{"int8", "uint8", "float32"};

// /export/calibration less the core's batches and data.
ramjet::Fields calibration_fields() {
  using ramjet::Field;
  return {Field::string("method").one_of({"minmax", "percentile", "mse"}).fallback("minmax"),
          Field::number("percentile").above(50).at_most(100).fallback(99.99)
              .doc("percentile method: each tail is clipped at this percentile")};
}

bool pass_through(const std::string& op) {
  return op == "max_pool" || op == "avg_pool" || op == "global_avg_pool" || op == "global_max_pool" ||
         op == "flatten" || op == "reshape" || op == "zero_padding2d" || op == "cropping2d" || op == "depth_to_space" ||
         op == "resize";  // TFLite's resizes keep their input's parameters
}

bool fusable_activation(const std::string& a) { return a == "linear" || a == "relu" || a == "relu6"; }

// Throws naming the node when it has no int8 form.
void check_int8_form(const json& node) {
  const std::string op = node.at("op");
  const std::string act = activation_of(node);
  const bool ok = ((op == "conv2d" || op == "dense" || op == "add" || op == "conv2d_transpose") && fusable_activation(act)) ||
                  (op == "activation" && (act == "relu" || act == "relu6")) || op == "softmax" || op == "concat" ||
                  pass_through(op);
  if (ok) return;
  std::string what = describe(node);
  if (op == "conv2d" || op == "dense" || op == "add" || op == "activation" || op == "conv2d_transpose")
    what = "layer '" + node.at("name").get<std::string>() + "' (op " + op + ", activation " + act + ")";
  throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, "int8 quantizer: " + what + " has no int8 form");
}

// Everything one quantize() call produces, built up node by node.
struct Output {
  json tensors = json::object();
  json params = json::object();
};

void put_kernel(Output& out, ramjet::Example& out_params, const json& node, const FloatTensor& kernel,
                const std::string& name, QuantizedWeights& q) {
  // Per output channel: axis 3 of a conv2d's [kh, kw, in, out], axis 2 of a conv2d_transpose's [kh, kw, out, in]
  // (written to TRANSPOSE_CONV's OHWI as quantized dimension 0, as TensorFlow's converter does); dense per tensor.
  const std::string op = node.at("op");
  if (op == "conv2d") {
    q = quantize_symmetric(kernel.values, kernel.shape.back());
  } else if (op == "conv2d_transpose") {
    q = quantize_symmetric(kernel.values, kernel.shape.at(2), kernel.shape.at(3));
  } else {
    q = quantize_symmetric(kernel.values, 1);
  }
  const int axis = op == "conv2d" ? 3 : op == "conv2d_transpose" ? 2 : -1;
  TensorQuant tq{"int8", q.scales, std::vector<int64_t>(q.scales.size(), 0), axis};
  out.tensors[name] = tq.to_json();
  out.params[name] = {{"shape", kernel.shape}, {"dtype", "int8"}};
  out_params.set(name, make_tensor(kernel.shape, q.values));
}

}  // namespace

ramjet::Fields Int8Quantizer::fields() {
  using ramjet::Field;
  return {Field::string("mode").one_of({"full_integer", "dynamic_range"}).fallback("full_integer"),
          Field::string("input_type").one_of(kInterfaceTypes).fallback("int8").doc("dynamic_range: float32 only"),
          Field::string("output_type").one_of(kInterfaceTypes).fallback("int8").doc("dynamic_range: float32 only"),
          Field::object("calibration", calibration_fields()).fallback(json::object())};
}

void Int8Quantizer::check(const json& config, ramjet::Problems& problems) {
  if (config.value("mode", std::string()) != "dynamic_range") return;
  for (const char* key : {"input_type", "output_type"})
    if (config.contains(key) && config[key] != "float32") {
      problems.push_back({"/mode", "dynamic_range keeps float32 inputs and outputs; drop input_type/output_type"});
      return;
    }
}

// create() has checked the configuration against fields() and check(); here it is only read.
Int8Quantizer::Int8Quantizer(const ramjet::Config& config) : calibration_(false) {
  const json c = fields().with_defaults(config.json());
  const json calibration = calibration_fields().with_defaults(c.at("calibration"));
  full_integer_ = c.at("mode") == "full_integer";
  input_type_ = full_integer_ ? c.at("input_type").get<std::string>() : "float32";
  output_type_ = full_integer_ ? c.at("output_type").get<std::string>() : "float32";
  method_ = parse_range_method(calibration.at("method"), config.where("calibration/method"));
  percentile_ = calibration.at("percentile").get<double>();
  calibration_ = Calibration(method_ != RangeMethod::minmax);
}

void Int8Quantizer::observe(std::string_view tensor, const DLTensor& value) {
  // Dynamic range needs no activation statistics; accept and ignore them so one host flow serves both modes.
  if (!full_integer_) return;
  calibration_.observe(std::string(tensor), value);
}

json Int8Quantizer::quantize(const json& graph, ramjet::Example& params, ramjet::Example& out_params) {
  const std::string where = "int8 quantizer";
  FloatParams floats = read_float_params(graph, params, where);
  Rewritten rewritten = rewrite_for_inference(graph, floats);
  json qgraph = std::move(rewritten.graph);
  Output out;

  auto observed = [&](const std::string& tensor) -> AffineParams {
    const TensorObserver* o = calibration_.find(tensor);
    if (o == nullptr)
      throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT,
                          where + ": tensor '" + tensor + "' was never observed: calibrate before quantize");
    return int8_activation_params(calibrated_range(*o, method_, percentile_));
  };
  auto activation = [](AffineParams p) { return TensorQuant{"int8", {p.scale}, {p.zero_point}, -1}.to_json(); };

  if (full_integer_) {
    for (const auto& input : qgraph.at("inputs")) out.tensors[input.at("name").get<std::string>()] = activation(observed(input.at("name")));
  }
  for (auto& node : qgraph.at("nodes")) {
    const std::string name = node.at("name"), op = node.at("op");
    // A conv2d_transpose's kernel is int8 in full integer; dynamic range leaves it float32, for TFLite's float
    // TRANSPOSE_CONV.
    const bool weighted = op == "conv2d" || op == "dense" || (op == "conv2d_transpose" && full_integer_);
    if (full_integer_) {
      check_int8_form(node);
      if (pass_through(op)) out.tensors[name] = out.tensors.at(node.at("inputs")[0].get<std::string>());
      else if (op == "softmax") out.tensors[name] = TensorQuant{"int8", {1.0f / 256.0f}, {-128}, -1}.to_json();
      else out.tensors[name] = activation(observed(rewritten.range_of(name)));
    }
    if (!weighted) continue;
    const std::string kernel_name = node.at("params").at("kernel");
    const FloatTensor& kernel = floats.at(kernel_name);
    QuantizedWeights qw;
    put_kernel(out, out_params, node, kernel, kernel_name, qw);
    if (!full_integer_) continue;
    // TFLite's int8 conv/dense kernels want a bias: a node without one gets zeros.
    const int64_t channels = op == "conv2d_transpose" ? kernel.shape.at(2) : kernel.shape.back();
    if (!node.contains("params") || !node["params"].contains("bias")) {
      const std::string bias_name = name + "/bias";
      node["params"]["bias"] = bias_name;
      node["attrs"]["use_bias"] = true;
      floats[bias_name] = FloatTensor{{channels}, std::vector<float>(static_cast<size_t>(channels), 0.0f)};
    }
    const std::string bias_name = node["params"]["bias"];
    const std::string input = node.at("inputs")[0];
    const float input_scale = out.tensors.at(input).at("scale")[0].get<float>();
    const QuantizedBias qb = quantize_bias(floats.at(bias_name).values, input_scale, qw.scales);
    if (qb.saturated > 0)
      ramjet::log(RAMJET_LOG_WARNING, "int8", describe(node) + ": " + std::to_string(qb.saturated) +
                                                  " bias values exceed the int32 range and were clamped");
    out.tensors[bias_name] = TensorQuant{"int32", qb.scales, std::vector<int64_t>(qb.scales.size(), 0),
                                         qb.scales.size() > 1 ? 0 : -1}.to_json();
    out.params[bias_name] = {{"shape", Shape{channels}}, {"dtype", "int32"}};
    out_params.set(bias_name, make_tensor(Shape{channels}, qb.values));
  }
  // Everything not quantized above stays float32 (dynamic range: biases and any other parameter).
  for (const auto& [name, tensor] : floats) {
    if (out.params.contains(name)) continue;
    out.params[name] = {{"shape", tensor.shape}, {"dtype", "float32"}};
    out_params.set(name, make_tensor(tensor.shape, tensor.values));
  }
  const char* mode = full_integer_ ? "full_integer" : "dynamic_range";
  qgraph["params"] = out.params;
  // At the top level too, so the host can tell an int8-runnable qgraph without knowing this quantizer's words.
  qgraph["mode"] = mode;
  qgraph["quantization"] = {
      {"version", 1},
      {"mode", mode},
      {"input_type", input_type_},
      {"output_type", output_type_},
      {"calibration", {{"method", range_method_name(method_)}, {"batches", calibration_.batches()}}},
      {"tensors", out.tensors}};
  if (method_ == RangeMethod::percentile) qgraph["quantization"]["calibration"]["percentile"] = percentile_;
  return qgraph;
}

}  // namespace tflite_plugin
