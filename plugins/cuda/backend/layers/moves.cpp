// The layers that only move, repeat or blend values: concat, transpose, zero_padding2d, cropping2d, depth_to_space
// and resize. Each node's attributes are checked as the cpu backend checks them; its linear map (linear_map.hpp) is
// built and uploaded once, and backward applies each input's transposed map to the output's gradient.
#include "../layer.hpp"
#include "../linear_map.hpp"
#include "../linear_map_kernel.hpp"
#include "cuda_check.hpp"

namespace cuda_plugin {
namespace {

using ramjet::ir::shape_string;

// A map's terms in device memory.
class DeviceMap {
 public:
  DeviceMap(Device& device, const LinearMap& map, const std::string& purpose)
      : rows_(map.rows), source_elements_(map.source_elements) {
    std::vector<int32_t> source;
    std::vector<int64_t> offset;
    std::vector<float> weight;
    for (const LinearMap::Term& t : map.terms) {
      source.push_back(t.source);
      offset.push_back(t.offset);
      weight.push_back(t.weight);
    }
    row_start_ = upload(device, map.row_start, purpose);
    source_ = upload(device, source, purpose);
    offset_ = upload(device, offset, purpose);
    weight_ = upload(device, weight, purpose);
    device.wait(purpose);  // the host's vectors go when this returns
  }

  void apply(const std::vector<const void*>& sources, void* out, int64_t batch, cudaDataType_t dtype,
             cudaStream_t stream) const {
    MapSources in{};
    for (size_t i = 0; i < sources.size(); ++i) {
      in.data[i] = sources[i];
      in.elements[i] = source_elements_[i];
    }
    const MapTerms terms{row_start_.as<int64_t>(), source_.as<int32_t>(), offset_.as<int64_t>(), weight_.as<float>(), rows_};
    apply_linear_map(terms, in, out, batch, dtype, stream);
  }

 private:
  template <class T>
  static Buffer upload(Device& device, const std::vector<T>& values, const std::string& purpose) {
    Buffer b(device, values.size() * sizeof(T), purpose);
    if (!values.empty())
      check(cudaMemcpyAsync(b.get(), values.data(), b.bytes(), cudaMemcpyHostToDevice, device.stream()),
            "cudaMemcpyAsync", purpose);
    return b;
  }

  int64_t rows_;
  std::vector<int64_t> source_elements_;
  Buffer row_start_, source_, offset_, weight_;
};

class MapLayer : public Layer {
 public:
  MapLayer(const NodeSpec& node, Build& b, const LinearMap& map)
      : device_(b.device), dtype_(b.dtype), batch_(b.batch), inputs_(b.inputs), out_(b.output),
        forward_(b.device, map, node.name + " (" + node.op + " map)") {
    if (!b.backward) return;
    for (size_t i = 0; i < inputs_.size(); ++i)
      backward_.push_back(inputs_[i]->wants_grad ? std::make_unique<DeviceMap>(b.device, map.transposed(static_cast<int32_t>(i)),
                                                                                node.name + " (" + node.op + " gradient map)")
                                                 : nullptr);
  }

  void forward(const Pass&) override {
    std::vector<const void*> sources;
    for (const Value* v : inputs_) sources.push_back(v->data.get());
    forward_.apply(sources, out_.data.get(), batch_, dtype_, device_.stream());
  }

  void backward(const Pass&) override {
    for (size_t i = 0; i < backward_.size(); ++i) {
      if (!backward_[i]) continue;
      Value& in = *inputs_[i];
      backward_[i]->apply({out_.grad.get()}, gradient_slot(in, device_, dtype_, "input gradient of " + out_.name),
                          batch_, dtype_, device_.stream());
      gradient_written(in, device_, dtype_);
    }
  }

 private:
  Device& device_;
  cudaDataType_t dtype_;
  int64_t batch_;
  std::vector<Value*> inputs_;
  Value& out_;
  DeviceMap forward_;
  std::vector<std::unique_ptr<DeviceMap>> backward_;  // per input; null where no gradient is wanted
};

std::unique_ptr<Layer> map_layer(const NodeSpec& node, Build& b, const Shape& out, const LinearMap& map) {
  b.check_output(node, out);
  return std::make_unique<MapLayer>(node, b, map);
}

std::vector<int64_t> non_negative(const NodeSpec& node, const char* key) {
  const std::vector<int64_t> v = node.attr_ints(key, 4);
  for (int64_t x : v)
    if (x < 0) node.fail(RAMJET_ERR_INVALID_ARGUMENT, std::string("attribute '") + key + "' must not be negative");
  return v;
}

}  // namespace

std::unique_ptr<Layer> make_concat(const NodeSpec& node, Build& b) {
  if (b.inputs.size() < 2) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "concat takes two or more inputs");
  if (b.inputs.size() > kMaxMapSources)
    node.fail(RAMJET_ERR_UNSUPPORTED, "the cuda backend joins at most " + std::to_string(kMaxMapSources) + " inputs");
  const Shape& first = b.inputs[0]->shape;
  const int64_t rank = static_cast<int64_t>(first.size()), axis = node.attr_int("axis", -1);
  if (rank == 0 || axis < -rank || axis >= rank)
    node.fail(RAMJET_ERR_INVALID_ARGUMENT, "attribute 'axis' (" + std::to_string(axis) + ") names no axis of '" +
                                               b.inputs[0]->name + "' " + shape_string(first));
  const size_t k = static_cast<size_t>(axis < 0 ? axis + rank : axis);
  Shape out = first;
  out[k] = 0;
  std::vector<Shape> shapes;
  for (const Value* v : b.inputs) {
    bool agree = v->shape.size() == first.size();
    for (size_t d = 0; agree && d < first.size(); ++d) agree = d == k || v->shape[d] == first[d];
    if (!agree)
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "inputs '" + b.inputs[0]->name + "' " + shape_string(first) + " and '" +
                                                 v->name + "' " + shape_string(v->shape) +
                                                 " differ on an axis other than the joined one (" + std::to_string(k) + ")");
    out[k] += v->shape[k];
    shapes.push_back(v->shape);
  }
  return map_layer(node, b, out, concat_map(shapes, k));
}

std::unique_ptr<Layer> make_transpose(const NodeSpec& node, Build& b) {
  const Shape& in = b.only_input(node, 0, "one tensor");
  const auto attr = node.attrs.find("perm");
  if (attr == node.attrs.end() || !attr->is_array() || attr->size() != in.size())
    node.fail(RAMJET_ERR_INVALID_ARGUMENT, "attribute 'perm' must list each of the input's axes once");
  std::vector<bool> seen(in.size(), false);
  std::vector<size_t> perm;
  Shape out;
  for (const auto& a : *attr) {
    if (!a.is_number_integer() || a.get<int64_t>() < 0 || a.get<int64_t>() >= static_cast<int64_t>(in.size()) ||
        seen[a.get<size_t>()])
      node.fail(RAMJET_ERR_INVALID_ARGUMENT, "attribute 'perm' must be a permutation of the input's axes");
    seen[a.get<size_t>()] = true;
    perm.push_back(a.get<size_t>());
    out.push_back(in[perm.back()]);
  }
  return map_layer(node, b, out, transpose_map(in, perm));
}

std::unique_ptr<Layer> make_zero_padding2d(const NodeSpec& node, Build& b) {
  const Shape& in = b.only_input(node, 3, "an [H, W, C] image");
  const auto p = non_negative(node, "padding");
  return map_layer(node, b, {in[0] + p[0] + p[1], in[1] + p[2] + p[3], in[2]}, zero_padding_map(in, p[0], p[1], p[2], p[3]));
}

std::unique_ptr<Layer> make_cropping2d(const NodeSpec& node, Build& b) {
  const Shape& in = b.only_input(node, 3, "an [H, W, C] image");
  const auto c = non_negative(node, "cropping");
  if (c[0] + c[1] >= in[0] || c[2] + c[3] >= in[1])
    node.fail(RAMJET_ERR_INVALID_ARGUMENT, "attribute 'cropping' removes the whole input " + shape_string(in));
  return map_layer(node, b, {in[0] - c[0] - c[1], in[1] - c[2] - c[3], in[2]}, cropping_map(in, c[0], c[1], c[2], c[3]));
}

std::unique_ptr<Layer> make_depth_to_space(const NodeSpec& node, Build& b) {
  const Shape& in = b.only_input(node, 3, "an [H, W, C] image");
  const int64_t block = node.attr_int("block_size");
  if (block < 2 || in[2] % (block * block) != 0)
    node.fail(RAMJET_ERR_INVALID_ARGUMENT, "attribute 'block_size' must be at least 2, its square dividing the " +
                                               std::to_string(in[2]) + " channels");
  return map_layer(node, b, {in[0] * block, in[1] * block, in[2] / (block * block)}, depth_to_space_map(in, block));
}

std::unique_ptr<Layer> make_resize(const NodeSpec& node, Build& b) {
  const Shape& in = b.only_input(node, 3, "an image [H, W, C]");
  const int64_t height = node.attr_int("height"), width = node.attr_int("width");
  if (height < 1 || width < 1) node.fail(RAMJET_ERR_INVALID_ARGUMENT, "height and width must be >= 1");
  const std::string how = node.attr_string("interpolation", "bilinear");
  if (how != "nearest" && how != "bilinear")
    node.fail(RAMJET_ERR_INVALID_ARGUMENT, "interpolation must be \"nearest\" or \"bilinear\", got '" + how + "'");
  return map_layer(node, b, {height, width, in[2]}, resize_map(in, height, width, how == "nearest"));
}

}  // namespace cuda_plugin
