// What a layer rule sees while it turns one layer of the manifest's `model.layers` into a graph IR node: the layer's
// fields with readers that check them (and fail with the field's JSON pointer), its inputs' per-example shapes, and
// the node being built (output shape, attributes, parameters). One rule per layer type lives in image_layers.cpp or
// sequence_layers.cpp; graph_builder.cpp resolves names and inputs and calls them.
#pragma once

#include "ramjet/plugin/failure.hpp"
#include "ramjet/plugin/location.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace ramjet::core::model_rules {

using Shape = std::vector<int64_t>;
using nlohmann::json;

// Bounds on what a manifest may ask for, so that no size arithmetic downstream (offsets, byte counts, oneDNN
// descriptors) can overflow: one dimension (units, filters, a kernel or input extent) below 2^24, one example's
// tensor below 2^31 elements.
constexpr int64_t kMaxDimension = int64_t{1} << 24;
constexpr int64_t kMaxElementsPerExample = int64_t{1} << 31;

std::string shape_text(const Shape& s);
// The element count, or INT64_MAX when it overflows.
int64_t product(const Shape& s);

struct InputInfo {
  Shape shape;
  std::string dtype;  // "float32" or "int32"
};

class LayerSite {
 public:
  // `add_param` declares a parameter in the IR (name, shape, initializer, fans), failing at `pointer` when the
  // model would not fit in memory.
  using ParamSink = std::function<void(const std::string& name, const Shape& shape, const std::string& init,
                                       int64_t fan_in, int64_t fan_out, const std::string& pointer)>;
  LayerSite(const Origin& origin, const json& layer, std::string pointer, std::string type, std::string name,
            std::vector<std::string> inputs, std::vector<InputInfo> input_info, ParamSink add_param)
      : origin_(origin), layer_(layer), pointer_(std::move(pointer)), type_(std::move(type)), name_(std::move(name)),
        inputs_(std::move(inputs)), input_info_(std::move(input_info)), add_param_(std::move(add_param)) {}

  const std::string& type() const { return type_; }
  const std::string& name() const { return name_; }
  const std::string& pointer() const { return pointer_; }
  const json& layer() const { return layer_; }

  // Fails at the layer (`field` empty) or at one of its fields.
  [[noreturn]] void fail(const std::string& message) const { fail_at("", message); }
  [[noreturn]] void fail_at(const std::string& field, const std::string& message) const;

  size_t input_count() const { return inputs_.size(); }
  const std::string& input_name(size_t i) const { return inputs_.at(i); }
  const Shape& input(size_t i) const { return input_info_.at(i).shape; }
  const std::string& input_dtype(size_t i) const { return input_info_.at(i).dtype; }
  // The one input of a layer that takes one; fails otherwise.
  const Shape& single() const;
  // Every input must be float32 (only an embedding reads token IDs).
  void require_float_inputs() const;

  bool has(const char* key) const { return layer_.contains(key); }
  // A required integer in [1, kMaxDimension].
  int64_t positive(const char* key) const;
  // An optional integer in [1, kMaxDimension].
  int64_t positive(const char* key, int64_t fallback) const;
  // An optional number; `ok` says whether a value is allowed, `rule` how the message states the rule.
  double number(const char* key, double fallback, bool (*ok)(double), const char* rule) const;
  bool flag(const char* key, bool fallback) const;
  // A positive integer or [height, width].
  std::vector<int64_t> pair(const char* key, int64_t fallback) const;
  std::string activation() const;
  std::string initializer(const char* key, const char* fallback) const;
  // Rows and columns to add or remove around an image, as Keras's ZeroPadding2D and Cropping2D take them: an integer
  // (every side), [rows, columns] (both sides of each) or [[top, bottom], [left, right]]; each in [0, kMaxDimension].
  // Returns {top, bottom, left, right}.
  std::vector<int64_t> sides(const char* key, int64_t fallback) const;
  // `padding`: "valid" or "same" (with `causal` allowed, also "causal").
  std::string padding(bool causal_allowed = false) const;

  // The node being built.
  Shape out;
  std::string op;  // defaults to the type
  json attrs = json::object();
  json params = json::object();
  // Declares parameter `role` of this layer ("kernel" → "<name>/kernel") and binds it to the node.
  void param(const std::string& role, const Shape& shape, const std::string& init, int64_t fan_in, int64_t fan_out);
  // A kernel and, with use_bias, a bias, initialized from the layer's kernel_initializer / bias_initializer.
  void kernel_and_bias(const Shape& kernel, int64_t fan_in, int64_t fan_out, const Shape& bias, bool use_bias);

 private:
  const Origin& origin_;
  const json& layer_;
  std::string pointer_, type_, name_;
  std::vector<std::string> inputs_;
  std::vector<InputInfo> input_info_;
  ParamSink add_param_;
};

// Output extent and padding (before, after) of one spatial axis as Keras computes them, for a kernel of `k` taps,
// stride `s`, dilation `d` and padding "valid", "same" or "causal" (all the padding before).
std::pair<int64_t, std::pair<int64_t, int64_t>> spatial(int64_t in, int64_t k, int64_t s, int64_t d,
                                                        const std::string& padding);

// Keras's names for the activations a layer may fuse or apply.
const std::set<std::string>& activations();

struct LayerRule {
  void (*build)(LayerSite& site);
  std::set<std::string> fields;  // the fields it reads, besides type, name and inputs
};
// Every layer type, by name: general_layers.cpp, image_layers.cpp and sequence_layers.cpp contribute theirs.
void add_general_layers(std::map<std::string, LayerRule>& rules);
void add_image_layers(std::map<std::string, LayerRule>& rules);
void add_sequence_layers(std::map<std::string, LayerRule>& rules);

}  // namespace ramjet::core::model_rules
