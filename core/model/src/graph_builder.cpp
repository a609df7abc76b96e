// The manifest's `model` object → the graph IR: inputs, then each layer through its rule (layer_site.hpp), then the
// outputs and the loss. Every problem is a ManifestError with the JSON pointer of the field at fault.
#include "layer_site.hpp"
#include "metric_specs.hpp"
#include "ramjet/model/graph.hpp"
#include "ramjet/plugin/machine_limits.hpp"

#include <ramjet/sdk/fields.hpp>

#include <algorithm>

namespace ramjet::core {
namespace {

using namespace model_rules;

const std::map<std::string, LayerRule>& layer_rules() {
  static const std::map<std::string, LayerRule> rules = [] {
    std::map<std::string, LayerRule> r;
    add_general_layers(r);
    add_image_layers(r);
    add_sequence_layers(r);
    return r;
  }();
  return rules;
}

std::string rule_names() {
  std::string out;
  for (const auto& [name, rule] : layer_rules()) out += (out.empty() ? "" : ", ") + name;
  return out;
}

const std::set<std::string> kLosses = {"sparse_softmax_cross_entropy", "categorical_cross_entropy",
                                       "binary_cross_entropy", "mse", "l1"};

// "unknown field 'x' (did you mean 'y'?); expected a, b": a typo names the word it missed.
std::string unknown_field(const std::string& key, const std::vector<std::string>& known, const std::string& what) {
  // A key can be megabytes long: only its start is echoed.
  std::string message = "unknown field '" + (key.size() > 60 ? key.substr(0, 60) + "..." : key) + "'" + what;
  if (auto guess = ramjet::closest_word(key, known)) message += " (did you mean '" + *guess + "'?)";
  std::string list;
  for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
  return message + "; expected " + (list.empty() ? "none" : list);
}

std::string did_you_mean(const std::string& word, const std::set<std::string>& known) {
  auto guess = ramjet::closest_word(word, std::vector<std::string>(known.begin(), known.end()));
  return guess ? " (did you mean '" + *guess + "'?)" : "";
}

class Builder {
 public:
  Builder(const Origin& origin, std::string pointer) : origin_(origin), root_(std::move(pointer)) {}

  Graph build(const json& model) {
    if (!model.is_object()) fail(root_, "the model must be an object");
    for (const auto& [key, value] : model.items())
      if (key != "input" && key != "layers" && key != "outputs" && key != "loss" && key != "metrics")
        fail(root_ + "/" + ramjet::pointer_token(key),
             unknown_field(key, {"input", "layers", "outputs", "loss", "metrics"}, ""));
    read_inputs(model);
    auto layers = model.find("layers");
    if (layers == model.end() || !layers->is_array() || layers->empty())
      fail(root_ + "/layers", "must be a non-empty array of layers");
    std::string previous = ir_["inputs"].size() == 1 ? ir_["inputs"][0]["name"].get<std::string>() : "";
    for (size_t i = 0; i < layers->size(); ++i)
      previous = add_layer((*layers)[i], root_ + "/layers/" + std::to_string(i), previous);
    read_outputs(model, previous);
    if (auto loss = model.find("loss"); loss != model.end()) read_loss(*loss);
    read_metrics(model);
    Graph g;
    g.ir = std::move(ir_);
    g.parameter_count = parameter_count_;
    return g;
  }

 private:
  [[noreturn]] void fail(const std::string& pointer, const std::string& message) const {
    throw ManifestError(origin_.where(pointer), pointer, message);
  }

  // {"image": [28, 28, 1]} (float32), or {"tokens": {"shape": [128], "dtype": "int32"}}; several inputs allowed.
  void read_inputs(const json& model) {
    auto input = model.find("input");
    if (input == model.end() || !input->is_object() || input->empty())
      fail(root_ + "/input", "must name the model's inputs and their per-example shapes, e.g. {\"image\": [28, 28, 1]}");
    ir_["inputs"] = json::array();
    ir_["nodes"] = json::array();
    ir_["params"] = json::object();
    for (const auto& [name, spec] : input->items()) {
      const std::string p = root_ + "/input/" + name;
      const json* shape = &spec;
      std::string dtype = "float32";
      if (spec.is_object()) {
        for (const auto& [key, value] : spec.items())
          if (key != "shape" && key != "dtype")
            fail(p + "/" + ramjet::pointer_token(key), unknown_field(key, {"shape", "dtype"}, ""));
        if (!spec.contains("shape")) fail(p + "/shape", "required field is missing");
        shape = &spec["shape"];
        if (spec.contains("dtype")) {
          if (!spec["dtype"].is_string() || (spec["dtype"] != "float32" && spec["dtype"] != "int32"))
            fail(p + "/dtype", "must be \"float32\" or \"int32\", got " + quote_value(spec["dtype"]));
          dtype = spec["dtype"];
        }
      }
      const std::string sp = spec.is_object() ? p + "/shape" : p;
      if (!shape->is_array() || shape->empty() || !std::all_of(shape->begin(), shape->end(), [](const json& d) {
            return d.is_number_integer() && d.get<int64_t>() > 0 && d.get<int64_t>() <= kMaxDimension;
          }))
        fail(sp, "must be an array of positive dimensions up to " + std::to_string(kMaxDimension) + ", e.g. [28, 28, 1]");
      if (product(shape->get<Shape>()) > kMaxElementsPerExample) fail(sp, "one example would have more than 2^31 elements");
      ir_["inputs"].push_back({{"name", name}, {"shape", *shape}, {"dtype", dtype}});
      shapes_[name] = {shape->get<Shape>(), dtype};
    }
  }

  // "outputs": the layers whose values the model returns; by default the last layer's.
  void read_outputs(const json& model, const std::string& last) {
    auto outputs = model.find("outputs");
    if (outputs == model.end()) {
      ir_["outputs"] = json::array({last});
      return;
    }
    const std::string p = root_ + "/outputs";
    if (!outputs->is_array() || outputs->empty()) fail(p, "must be a non-empty array of layer names");
    std::set<std::string> seen;
    for (size_t i = 0; i < outputs->size(); ++i) {
      const json& o = (*outputs)[i];
      if (!o.is_string() || !nodes_.count(o.get<std::string>()))
        fail(p + "/" + std::to_string(i), "no layer is named " + quote_value(o));
      if (!seen.insert(o.get<std::string>()).second)
        fail(p + "/" + std::to_string(i), "'" + o.get<std::string>() + "' is listed twice");
    }
    ir_["outputs"] = *outputs;
  }

  void read_loss(const json& loss) {
    const std::string p = root_ + "/loss";
    if (!loss.is_object() || !loss.contains("type") || !loss["type"].is_string())
      fail(p, "must be an object with a \"type\"");
    const std::string type = loss["type"];
    if (!kLosses.count(type))
      fail(p + "/type", "unknown loss '" + type + "'" + did_you_mean(type, kLosses) + " (" +
                            "expected sparse_softmax_cross_entropy, categorical_cross_entropy, binary_cross_entropy, mse, l1)");
    const bool sparse = type == "sparse_softmax_cross_entropy";
    const bool logits = sparse || type == "categorical_cross_entropy" || type == "binary_cross_entropy";
    for (const auto& [key, value] : loss.items()) {
      static const std::set<std::string> common = {"type", "labels", "output"};
      const bool known = common.count(key) || (sparse && key == "ignore_label") ||
                         ((sparse || type == "categorical_cross_entropy") && key == "label_smoothing") ||
                         (logits && key == "from_logits");
      if (!known) {
        std::vector<std::string> fields(common.begin(), common.end());
        if (sparse) fields.push_back("ignore_label");
        if (sparse || type == "categorical_cross_entropy") fields.push_back("label_smoothing");
        if (logits) fields.push_back("from_logits");
        fail(p + "/" + ramjet::pointer_token(key), unknown_field(key, fields, " for a " + type + " loss"));
      }
    }
    if (logits && loss.contains("from_logits") && loss["from_logits"] != true)
      fail(p + "/from_logits", type + " reads logits (the layer before the softmax): only true is supported");
    std::string output = ir_["outputs"][0];
    if (loss.contains("output")) {
      if (!loss["output"].is_string() || std::find(ir_["outputs"].begin(), ir_["outputs"].end(), loss["output"]) ==
                                             ir_["outputs"].end())
        fail(p + "/output", "must name one of the model's outputs, got " + quote_value(loss["output"]));
      output = loss["output"];
    }
    if (loss.contains("labels") && (!loss["labels"].is_string() || loss["labels"].get<std::string>().empty()))
      fail(p + "/labels", "must be the name of the labels tensor");
    const std::string labels = loss.value("labels", std::string("label"));
    const Shape& out = nodes_.at(output);
    json ir_loss = {{"op", type}, {"input", output}, {"labels", labels}};
    Shape label_shape = out;
    if (sparse) label_shape.pop_back();  // one class per position: [T] for logits [T, V], [] for [K]
    if (sparse && loss.contains("ignore_label")) {
      if (!loss["ignore_label"].is_number_integer()) fail(p + "/ignore_label", "must be an integer");
      ir_loss["ignore_label"] = loss["ignore_label"];
    }
    if (loss.contains("label_smoothing")) {
      const json& v = loss["label_smoothing"];
      if (!v.is_number() || v.get<double>() < 0 || v.get<double>() >= 1)
        fail(p + "/label_smoothing", "must be a number in [0, 1), got " + quote_value(v));
      ir_loss["label_smoothing"] = v;
    }
    ir_["loss"] = ir_loss;
    ir_["labels"] = {{"name", labels}, {"dtype", sparse ? "int32" : "float32"}, {"shape", label_shape}};
  }

  // Metrics score the output the loss reads (the first output without a loss).
  void read_metrics(const json& model) {
    const json loss = ir_.contains("loss") ? ir_["loss"] : json();
    const std::string scored = loss.is_null() ? ir_["outputs"][0].get<std::string>() : loss["input"].get<std::string>();
    auto declared = model.find("metrics");
    ir_["metrics"] = metric_specs(declared == model.end() ? nullptr : &*declared, loss, nodes_.at(scored), origin_,
                                  root_ + "/metrics");
  }

  // Keras naming: the first conv2d is "conv2d", the next "conv2d_1", ...
  std::string unique_name(const json& layer, const std::string& type, const std::string& p) {
    if (layer.contains("name")) {
      if (!layer["name"].is_string() || layer["name"].get<std::string>().empty())
        fail(p + "/name", "must be a non-empty string");
      std::string name = layer["name"];
      if (shapes_.count(name)) fail(p + "/name", "'" + name + "' is already used");
      return name;
    }
    for (int n = 0;; ++n) {
      std::string name = n == 0 ? type : type + "_" + std::to_string(n);
      if (!shapes_.count(name)) return name;
    }
  }

  std::vector<std::string> layer_inputs(const json& layer, const std::string& p, const std::string& previous) {
    if (!layer.contains("inputs")) {
      if (previous.empty())
        fail(p + "/inputs", "the model has several inputs: name the one this layer reads");
      return {previous};
    }
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
    const std::string type = layer["type"];
    auto rule = layer_rules().find(type);
    if (rule == layer_rules().end()) {
      std::vector<std::string> names;
      for (const auto& [n, r] : layer_rules()) names.push_back(n);
      const auto guess = ramjet::closest_word(type, names);
      fail(p + "/type", "unknown layer type '" + (type.size() > 60 ? type.substr(0, 60) + "..." : type) + "'" +
                            (guess ? " (did you mean '" + *guess + "'?)" : "") + "; the types are: " + rule_names());
    }
    // Fields a layer does not read are mistakes (a typo in "filters" must not silently use a default).
    for (const auto& [key, value] : layer.items()) {
      (void)value;
      if (key != "type" && key != "name" && key != "inputs" && !rule->second.fields.count(key)) {
        std::vector<std::string> fields(rule->second.fields.begin(), rule->second.fields.end());
        for (const char* common : {"type", "name", "inputs"}) fields.push_back(common);
        fail(p + "/" + ramjet::pointer_token(key), unknown_field(key, fields, " for a " + type + " layer"));
      }
    }
    const auto inputs = layer_inputs(layer, p, previous);
    std::vector<InputInfo> info;
    for (const auto& n : inputs) info.push_back(shapes_.at(n));
    const std::string name = unique_name(layer, type, p);
    LayerSite site(origin_, layer, p, type, name, inputs, std::move(info),
                   [this](const std::string& n, const Shape& s, const std::string& init, int64_t fi, int64_t fo,
                          const std::string& where) { add_param(n, s, init, fi, fo, where); });
    site.op = type;
    rule->second.build(site);
    if (site.out.empty() || product(site.out) < 1) fail(p, "produces an empty output " + shape_text(site.out));
    if (product(site.out) > kMaxElementsPerExample)
      fail(p, "its output " + shape_text(site.out) + " would have more than 2^31 elements per example");
    json node = {{"name", name}, {"op", site.op}, {"inputs", inputs}, {"shape", site.out}, {"attrs", site.attrs}};
    if (!site.params.empty()) node["params"] = site.params;
    ir_["nodes"].push_back(node);
    shapes_[name] = {site.out, "float32"};
    nodes_[name] = site.out;
    return name;
  }

  const Origin& origin_;
  std::string root_;
  json ir_ = json::object();
  std::map<std::string, InputInfo> shapes_;  // inputs and layers
  std::map<std::string, Shape> nodes_;       // layers only
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
