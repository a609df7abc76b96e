#include "ramjet/plugin/failure.hpp"
#include "ramjet/model/graph.hpp"
#include "ramjet/plugin/machine_limits.hpp"

#include <ramjet/sdk/fields.hpp>

#include <algorithm>
#include <map>
#include <set>

namespace ramjet::core {
namespace {

using nlohmann::json;
using Shape = std::vector<int64_t>;

std::string shape_text(const Shape& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

// Bounds on what a manifest may ask for, so that no size arithmetic downstream (offsets, byte counts, oneDNN
// descriptors) can overflow: one dimension (units, filters, a kernel or input extent) below 2^24, one example's
// tensor below 2^31 elements.
constexpr int64_t kMaxDimension = int64_t{1} << 24;
constexpr int64_t kMaxElementsPerExample = int64_t{1} << 31;

// The element count, or INT64_MAX when it overflows.
int64_t product(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s)
    if (__builtin_mul_overflow(n, d, &n)) return INT64_MAX;
  return n;
}


const std::set<std::string> kActivations = {"linear", "relu", "relu6", "sigmoid", "tanh", "gelu"};
const std::set<std::string> kInitializers = {"glorot_uniform", "glorot_normal", "he_uniform", "he_normal",
                                             "lecun_normal",   "zeros",         "ones"};

class Builder {
 public:
  Builder(const Origin& origin, std::string pointer) : origin_(origin), root_(std::move(pointer)) {}

  Graph build(const json& model) {
    if (!model.is_object()) fail(root_, "the model must be an object");
    for (const auto& [key, value] : model.items())
      if (key != "input" && key != "layers" && key != "loss")
        fail(root_ + "/" + key, "unknown field (expected input, layers, loss)");
    read_inputs(model);
    auto layers = model.find("layers");
    if (layers == model.end() || !layers->is_array() || layers->empty())
      fail(root_ + "/layers", "must be a non-empty array of layers");
    std::string previous = ir_["inputs"][0]["name"];
    for (size_t i = 0; i < layers->size(); ++i) previous = add_layer((*layers)[i], root_ + "/layers/" + std::to_string(i), previous);
    ir_["outputs"] = json::array({previous});
    if (auto loss = model.find("loss"); loss != model.end()) read_loss(*loss, previous);
    Graph g;
    g.ir = std::move(ir_);
    g.parameter_count = parameter_count_;
    return g;
  }

 private:
  [[noreturn]] void fail(const std::string& pointer, const std::string& message) const {
    throw ManifestError(origin_.where(pointer), pointer, message);
  }

  void read_inputs(const json& model) {
    auto input = model.find("input");
    if (input == model.end() || !input->is_object() || input->size() != 1)
      fail(root_ + "/input", "must name exactly one input and its per-example shape, e.g. {\"image\": [28, 28, 1]}");
    const std::string name = input->begin().key();
    const json& shape = input->begin().value();
    if (!shape.is_array() || shape.empty() ||
        !std::all_of(shape.begin(), shape.end(), [](const json& d) {
          return d.is_number_integer() && d.get<int64_t>() > 0 && d.get<int64_t>() <= kMaxDimension;
        }))
      fail(root_ + "/input/" + name, "must be an array of positive dimensions up to " + std::to_string(kMaxDimension) +
                                         ", e.g. [28, 28, 1]");
    if (product(shape.get<Shape>()) > kMaxElementsPerExample)
      fail(root_ + "/input/" + name, "one example would have more than 2^31 elements");
    ir_["inputs"] = json::array({{{"name", name}, {"shape", shape}, {"dtype", "float32"}}});
    ir_["nodes"] = json::array();
    ir_["params"] = json::object();
    shapes_[name] = shape.get<Shape>();
  }

  void read_loss(const json& loss, const std::string& output) {
    const std::string p = root_ + "/loss";
    if (!loss.is_object() || !loss.contains("type") || !loss["type"].is_string())
      fail(p, "must be an object with a \"type\"");
    const std::string type = loss["type"];
    if (type != "sparse_softmax_cross_entropy" && type != "mse" && type != "l1")
      fail(p + "/type", "unknown loss '" + type + "' (expected sparse_softmax_cross_entropy, mse, l1)");
    const std::string labels = loss.value("labels", std::string("label"));
    if (type == "sparse_softmax_cross_entropy" && shapes_[output].size() != 1)
      fail(p, "sparse_softmax_cross_entropy needs a 1-D output of class scores, the model's output is " +
                  shape_text(shapes_[output]));
    ir_["loss"] = {{"op", type}, {"input", output}, {"labels", labels}};
    ir_["labels"] = {{"name", labels}, {"dtype", type == "sparse_softmax_cross_entropy" ? "int32" : "float32"}};
  }

  // Keras naming: the first conv2d is "conv2d", the next "conv2d_1", ...
  std::string unique_name(const json& layer, const std::string& op, const std::string& p) {
    if (layer.contains("name")) {
      if (!layer["name"].is_string() || layer["name"].get<std::string>().empty()) fail(p + "/name", "must be a non-empty string");
      std::string name = layer["name"];
      if (shapes_.count(name)) fail(p + "/name", "'" + name + "' is already used");
      return name;
    }
    for (int n = 0;; ++n) {
      std::string name = n == 0 ? op : op + "_" + std::to_string(n);
      if (!shapes_.count(name)) return name;
    }
  }

  std::vector<std::string> layer_inputs(const json& layer, const std::string& p, const std::string& previous) {
    if (!layer.contains("inputs")) return {previous};
    const json& in = layer["inputs"];
    std::vector<std::string> names;
    if (in.is_string()) names.push_back(in);
    else if (in.is_array() && !in.empty() && std::all_of(in.begin(), in.end(), [](const json& x) { return x.is_string(); }))
      names = in.get<std::vector<std::string>>();
    else fail(p + "/inputs", "must be a layer name or an array of layer names");
    for (const auto& n : names)
      if (!shapes_.count(n)) fail(p + "/inputs", "no earlier layer or input is named '" + n + "'");
    return names;
  }

  std::vector<int64_t> pair(const json& layer, const char* key, int64_t fallback, const std::string& p) {
    if (!layer.contains(key)) return {fallback, fallback};
    const json& v = layer[key];
    auto ok = [](const json& x) {
      return x.is_number_integer() && x.get<int64_t>() > 0 && x.get<int64_t>() <= kMaxDimension;
    };
    if (ok(v)) return {v.get<int64_t>(), v.get<int64_t>()};
    if (v.is_array() && v.size() == 2 && ok(v[0]) && ok(v[1])) return v.get<std::vector<int64_t>>();
    fail(p + "/" + key, "must be a positive integer or [height, width], each at most " + std::to_string(kMaxDimension));
  }

  int64_t positive(const json& layer, const char* key, const std::string& p) {
    auto it = layer.find(key);
    if (it == layer.end()) fail(p + "/" + key, "required field is missing");
    if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > kMaxDimension)
      fail(p + "/" + key, "must be an integer from 1 to " + std::to_string(kMaxDimension) + ", got " +
                              ramjet::quote_value(*it));
    return it->get<int64_t>();
  }

  std::string activation(const json& layer, const std::string& p) {
    std::string a = layer.value("activation", std::string("linear"));
    if (layer.contains("activation") && layer["activation"].is_null()) a = "linear";
    if (!kActivations.count(a)) fail(p + "/activation", "unknown activation '" + a + "' (linear, relu, relu6, sigmoid, tanh, gelu)");
    return a;
  }

  std::string initializer(const json& layer, const char* key, const char* fallback, const std::string& p) {
    std::string init = layer.value(key, std::string(fallback));
    if (!kInitializers.count(init)) fail(p + "/" + key, "unknown initializer '" + init + "'");
    return init;
  }

  // Output extent and padding for one spatial axis, as Keras computes them.
  static std::pair<int64_t, std::pair<int64_t, int64_t>> spatial(int64_t in, int64_t k, int64_t s, int64_t d, bool same) {
    const int64_t dk = (k - 1) * d + 1;
    if (!same) return {in >= dk ? (in - dk) / s + 1 : 0, {0, 0}};
    const int64_t out = (in + s - 1) / s;
    const int64_t total = std::max<int64_t>((out - 1) * s + dk - in, 0);
    return {out, {total / 2, total - total / 2}};
  }

  bool same_padding(const json& layer, const std::string& p) {
    const std::string padding = layer.value("padding", std::string("valid"));
    if (padding != "valid" && padding != "same") fail(p + "/padding", "must be \"valid\" or \"same\"");
    return padding == "same";
  }

  void add_param(const std::string& name, const Shape& shape, const std::string& init, int64_t fan_in, int64_t fan_out,
                 const std::string& p) {
    ir_["params"][name] = {{"shape", shape}, {"init", init}, {"fan_in", fan_in}, {"fan_out", fan_out}};
    const int64_t count = product(shape);
    const int64_t memory = physical_memory_bytes();
    // Four bytes a parameter in float32, before gradients and optimizer slots: the least a run needs.
    if (count > kMaxElementsPerExample || __builtin_add_overflow(parameter_count_, count, &parameter_count_) ||
        (memory > 0 && parameter_count_ > memory / 4))
      fail(p, "the model's parameters would not fit in this machine's memory (" + std::to_string(memory >> 20) +
                  " MiB): " + name + " is " + shape_text(shape));
  }

  std::string add_layer(const json& layer, const std::string& p, const std::string& previous) {
    if (!layer.is_object() || !layer.contains("type") || !layer["type"].is_string())
      fail(p, "a layer must be an object with a \"type\"");
    std::string type = layer["type"];
    json node;
    const auto inputs = layer_inputs(layer, p, previous);
    auto single = [&]() -> const Shape& {
      if (inputs.size() != 1) fail(p + "/inputs", type + " takes exactly one input");
      return shapes_[inputs[0]];
    };
    Shape out;
    json attrs = json::object();
    json params = json::object();
    std::string op = type;
    std::string name;

    if (type == "conv2d" || type == "depthwise_conv2d") {
      const Shape& in = single();
      if (in.size() != 3) fail(p, type + " needs an [H, W, C] input, got " + shape_text(in));
      const auto k = pair(layer, "kernel", 0, p);
      if (k[0] == 0) fail(p + "/kernel", "required field is missing");
      const auto s = pair(layer, "strides", 1, p);
      const auto d = pair(layer, "dilation", 1, p);
      const bool same = same_padding(layer, p);
      int64_t groups = 1, filters;
      if (type == "depthwise_conv2d") {
        groups = in[2];
        filters = in[2] * layer.value("depth_multiplier", int64_t{1});
      } else {
        filters = positive(layer, "filters", p);
        groups = layer.value("groups", int64_t{1});
        if (groups < 1 || in[2] % groups != 0 || filters % groups != 0)
          fail(p + "/groups", "must divide both the input channels (" + std::to_string(in[2]) + ") and filters (" +
                                  std::to_string(filters) + ")");
      }
      const auto [oh, ph] = spatial(in[0], k[0], s[0], d[0], same);
      const auto [ow, pw] = spatial(in[1], k[1], s[1], d[1], same);
      if (oh < 1 || ow < 1)
        fail(p, "the " + std::to_string(k[0]) + "x" + std::to_string(k[1]) + " kernel does not fit the input " + shape_text(in));
      out = {oh, ow, filters};
      op = "conv2d";
      name = unique_name(layer, type, p);
      const bool bias = layer.value("use_bias", true);
      attrs = {{"filters", filters}, {"kernel", k}, {"strides", s}, {"padding", {ph.first, ph.second, pw.first, pw.second}},
               {"dilation", d}, {"groups", groups}, {"use_bias", bias}, {"activation", activation(layer, p)}};
      const Shape kernel{k[0], k[1], in[2] / groups, filters};
      add_param(name + "/kernel", kernel, initializer(layer, "kernel_initializer", "glorot_uniform", p),
                k[0] * k[1] * in[2] / groups, k[0] * k[1] * filters / groups, p);
      params["kernel"] = name + "/kernel";
      if (bias) {
        add_param(name + "/bias", {filters}, initializer(layer, "bias_initializer", "zeros", p), 0, 0, p);
        params["bias"] = name + "/bias";
      }
    } else if (type == "dense") {
      const Shape& in = single();
      if (in.size() != 1) fail(p, "dense needs a flat input, got " + shape_text(in) + " (add a flatten layer first)");
      const int64_t units = positive(layer, "units", p);
      out = {units};
      name = unique_name(layer, type, p);
      const bool bias = layer.value("use_bias", true);
      attrs = {{"units", units}, {"use_bias", bias}, {"activation", activation(layer, p)}};
      add_param(name + "/kernel", {in[0], units}, initializer(layer, "kernel_initializer", "glorot_uniform", p), in[0], units, p);
      params["kernel"] = name + "/kernel";
      if (bias) {
        add_param(name + "/bias", {units}, initializer(layer, "bias_initializer", "zeros", p), 0, 0, p);
        params["bias"] = name + "/bias";
      }
    } else if (type == "max_pool" || type == "avg_pool") {
      const Shape& in = single();
      if (in.size() != 3) fail(p, type + " needs an [H, W, C] input, got " + shape_text(in));
      const auto k = pair(layer, "pool", 2, p);
      const auto s = layer.contains("strides") ? pair(layer, "strides", 1, p) : k;
      const bool same = same_padding(layer, p);
      const auto [oh, ph] = spatial(in[0], k[0], s[0], 1, same);
      const auto [ow, pw] = spatial(in[1], k[1], s[1], 1, same);
      if (oh < 1 || ow < 1) fail(p, "the pool window does not fit the input " + shape_text(in));
      out = {oh, ow, in[2]};
      name = unique_name(layer, type, p);
      attrs = {{"pool", k}, {"strides", s}, {"padding", {ph.first, ph.second, pw.first, pw.second}}};
    } else if (type == "global_avg_pool") {
      const Shape& in = single();
      if (in.size() != 3) fail(p, "global_avg_pool needs an [H, W, C] input, got " + shape_text(in));
      out = {in[2]};
      name = unique_name(layer, type, p);
    } else if (type == "flatten") {
      out = {product(single())};
      name = unique_name(layer, type, p);
    } else if (type == "reshape") {
      const Shape& in = single();
      if (!layer.contains("shape") || !layer["shape"].is_array()) fail(p + "/shape", "required: the per-example shape");
      for (const auto& d : layer["shape"])
        if (!d.is_number_integer() || d.get<int64_t>() < -1 || d.get<int64_t>() > kMaxElementsPerExample)
          fail(p + "/shape", "dimensions must be positive integers (one may be -1), got " + ramjet::quote_value(d));
      out = layer["shape"].get<Shape>();
      int64_t known = 1, infer = -1;
      for (size_t i = 0; i < out.size(); ++i) {
        if (out[i] == -1 && infer < 0) infer = static_cast<int64_t>(i);
        else if (out[i] < 1) fail(p + "/shape", "dimensions must be positive (one may be -1)");
        else if (__builtin_mul_overflow(known, out[i], &known) || known > kMaxElementsPerExample)
          fail(p + "/shape", "more than 2^31 elements per example");
      }
      if (infer >= 0) out[static_cast<size_t>(infer)] = product(in) / known;
      if (product(out) != product(in)) fail(p + "/shape", shape_text(out) + " does not hold the " + std::to_string(product(in)) + " values of " + shape_text(in));
      attrs = {{"shape", out}};
      name = unique_name(layer, type, p);
    } else if (type == "dropout") {
      out = single();
      const double rate = layer.value("rate", 0.5);
      if (!(rate >= 0 && rate < 1)) fail(p + "/rate", "must be in [0, 1)");
      attrs = {{"rate", rate}};
      name = unique_name(layer, type, p);
    } else if (type == "batch_norm") {
      out = single();
      const int64_t c = out.back();
      name = unique_name(layer, type, p);
      attrs = {{"momentum", layer.value("momentum", 0.99)}, {"epsilon", layer.value("epsilon", 1e-3)}};
      for (const char* part : {"gamma", "beta", "moving_mean", "moving_variance"}) {
        const bool one = std::string(part) == "gamma" || std::string(part) == "moving_variance";
        add_param(name + "/" + part, {c}, one ? "ones" : "zeros", 0, 0, p);
        params[part] = name + "/" + part;
      }
      attrs["trainable"] = {"gamma", "beta"};
    } else if (type == "softmax") {
      out = single();
      name = unique_name(layer, type, p);
    } else if (kActivations.count(type) || type == "activation") {
      out = single();
      op = "activation";
      name = unique_name(layer, type == "activation" ? std::string("activation") : type, p);
      attrs = {{"activation", type == "activation" ? activation(layer, p) : type}};
    } else if (type == "add" || type == "concat") {
      if (inputs.size() < 2) fail(p + "/inputs", type + " needs at least two inputs");
      out = shapes_[inputs[0]];
      for (size_t i = 1; i < inputs.size(); ++i) {
        const Shape& other = shapes_[inputs[i]];
        if (type == "add" && other != out)
          fail(p + "/inputs", "add needs equal shapes: '" + inputs[0] + "' is " + shape_text(out) + ", '" + inputs[i] + "' is " + shape_text(other));
        if (type == "concat") {
          if (other.size() != out.size() || !std::equal(out.begin(), out.end() - 1, other.begin()))
            fail(p + "/inputs", "concat joins the last axis: all but the last dimension must match, got " +
                                    shape_text(out) + " and " + shape_text(other));
          out.back() += other.back();
        }
      }
      if (type == "concat") attrs = {{"axis", -1}};
      name = unique_name(layer, type, p);
    } else {
      fail(p + "/type", "unknown layer type '" + type + "' (conv2d, depthwise_conv2d, dense, max_pool, avg_pool, "
                                                "global_avg_pool, flatten, reshape, dropout, batch_norm, softmax, add, concat, "
                                                "relu, relu6, gelu, sigmoid, tanh, activation)");
    }
    for (const auto& [key, value] : layer.items()) {
      static const std::set<std::string> common = {"type", "name", "inputs"};
      (void)value;
      if (common.count(key)) continue;
      // Fields a layer does not read are mistakes (a typo in "filters" must not silently use a default).
      static const std::map<std::string, std::set<std::string>> allowed = {
          {"conv2d", {"filters", "kernel", "strides", "padding", "dilation", "groups", "use_bias", "activation", "kernel_initializer", "bias_initializer"}},
          {"depthwise_conv2d", {"kernel", "strides", "padding", "dilation", "depth_multiplier", "use_bias", "activation", "kernel_initializer", "bias_initializer"}},
          {"dense", {"units", "use_bias", "activation", "kernel_initializer", "bias_initializer"}},
          {"max_pool", {"pool", "strides", "padding"}},
          {"avg_pool", {"pool", "strides", "padding"}},
          {"reshape", {"shape"}},
          {"dropout", {"rate"}},
          {"batch_norm", {"momentum", "epsilon"}},
          {"activation", {"activation"}}};
      auto it = allowed.find(type);
      if (it == allowed.end() || !it->second.count(key)) fail(p + "/" + key, "unknown field for a " + type + " layer");
    }
    if (out.empty() || product(out) < 1) fail(p, "produces an empty output " + shape_text(out));
    if (product(out) > kMaxElementsPerExample)
      fail(p, "its output " + shape_text(out) + " would have more than 2^31 elements per example");
    node = {{"name", name}, {"op", op}, {"inputs", inputs}, {"shape", out}, {"attrs", attrs}};
    if (!params.empty()) node["params"] = params;
    ir_["nodes"].push_back(node);
    shapes_[name] = out;
    return name;
  }

  const Origin& origin_;
  std::string root_;
  json ir_ = json::object();
  std::map<std::string, Shape> shapes_;
  int64_t parameter_count_ = 0;
};

}  // namespace

Graph build_graph(const nlohmann::json& model, const Origin& origin, const std::string& pointer) {
  return Builder(origin, pointer).build(model);
}

std::string graph_summary(const Graph& graph) {
  std::string out;
  char line[200];
  std::snprintf(line, sizeof line, "%-28s %-16s %-18s %12s\n", "layer", "op", "output shape", "params");
  out += line;
  for (const auto& node : graph.ir["nodes"]) {
    int64_t count = 0;
    if (node.contains("params"))
      for (const auto& [role, name] : node["params"].items()) {
        (void)role;
        count += product(graph.ir["params"][name.get<std::string>()]["shape"].get<Shape>());
      }
    std::snprintf(line, sizeof line, "%-28s %-16s %-18s %12lld\n", node["name"].get<std::string>().c_str(),
                  node["op"].get<std::string>().c_str(), shape_text(node["shape"].get<Shape>()).c_str(),
                  static_cast<long long>(count));
    out += line;
  }
  out += "total parameters: " + std::to_string(graph.parameter_count) + "\n";
  return out;
}

}  // namespace ramjet::core
