#include "qplan.hpp"

#include "../layout.hpp"
#include "quantize_kernel.hpp"

#include <algorithm>
#include <cmath>

namespace onednn::int8 {
namespace {

// TFLite's QUANTIZE (quantize_kernel.hpp). Vectorised it takes ~0.1 ns a value, less than waking the OpenMP
// team (which sleeps between forwards) costs, so it runs on the calling thread unless the input is large.
void quantize(const float* x, uint8_t* q, int64_t n, const ActivationQuant& quant) {
  static const bool simd = quantize_avx512_supported();
  const float scale = quant.scale;
  const float zp = static_cast<float>(quant.zp_u8());
  constexpr int64_t chunk = 16384, parallel_from = 64;
  const int64_t chunks = (n + chunk - 1) / chunk;
#pragma omp parallel for schedule(static) if (chunks >= parallel_from)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = c * chunk, end = std::min(n, begin + chunk);
    if (simd) {
      quantize_avx512(x + begin, q + begin, end - begin, scale, zp);
      continue;
    }
    for (int64_t i = begin; i < end; ++i) q[i] = quantize_one(x[i], scale, zp);
  }
}

void dequantize(const uint8_t* q, float* x, int64_t n, const ActivationQuant& quant) {
  const float scale = quant.scale;
  const int32_t zp = quant.zp_u8();
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(static_cast<int32_t>(q[i]) - zp) * scale;
}

class Reorder : public QStep {
 public:
  Reorder(const dnnl::memory& from, const dnnl::memory& to) : reorder_(from, to), from_(from), to_(to) {}
  void run(dnnl::stream& stream) override { reorder_.execute(stream, from_, to_); }

 private:
  dnnl::reorder reorder_;
  dnnl::memory from_, to_;
};

}  // namespace

float* output_rows(ramjet::Example& outputs, const std::string& name, const Shape& shape) {
  DLTensor* t = outputs.find(name);
  const bool reusable = t != nullptr && t->device.device_type == kDLCPU &&
                        ramjet::same_dtype(t->dtype, ramjet::dtype_of<float>()) &&
                        t->ndim == static_cast<int32_t>(shape.size()) &&
                        std::equal(shape.begin(), shape.end(), t->shape) && ramjet::is_contiguous(*t);
  if (!reusable) {
    outputs.set(name, ramjet::Tensor::zeros(ramjet::dtype_of<float>(), shape));
    t = outputs.find(name);
  }
  return ramjet::data_as<float>(*t);
}

const float* input_rows(ramjet::Example& inputs, const std::string& name) {
  const DLTensor& t = *inputs.find(name);
  return reinterpret_cast<const float*>(static_cast<const char*>(t.data) + t.byte_offset);
}

QValue& QBuilder::value(const std::string& name) {
  const auto it = by_name_.find(name);
  if (it == by_name_.end()) fail(RAMJET_ERR_INTERNAL, "int8 plan: no value named '" + name + "'");
  return *it->second;
}

QValue& QBuilder::define(const std::string& name, const Shape& shape, const ActivationQuant& quant, const md& desc,
                         void* handle) {
  auto v = std::make_unique<QValue>();
  v->name = name;
  v->shape = shape;
  v->quant = quant;
  v->mem = handle ? dnnl::memory(desc, engine_, handle) : dnnl::memory(desc, engine_);
  by_name_[name] = v.get();
  values_.push_back(std::move(v));
  return *values_.back();
}

dnnl::memory QBuilder::in_layout(QValue& v, const md& want) {
  if (v.mem.get_desc() == want) return v.mem;
  dnnl::memory copy(want, engine_);
  add(std::make_unique<Reorder>(v.mem, copy));
  return copy;
}

dnnl::memory QBuilder::canonical(QValue& v) { return in_layout(v, canonical_md(batch_, v.shape, dt::u8)); }

const NodeSpec* QBuilder::sole_reader(const std::string& value) const {
  if (std::find(graph_.outputs.begin(), graph_.outputs.end(), value) != graph_.outputs.end()) return nullptr;
  const NodeSpec* reader = nullptr;
  for (const NodeSpec& node : graph_.nodes)
    for (const std::string& input : node.inputs)
      if (input == value) {
        if (reader != nullptr) return nullptr;
        reader = &node;
      }
  return reader;
}

dnnl::primitive_attr QBuilder::attr() const {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

QPlan::QPlan(const Graph& graph, const QuantTable& quant, const QParamStore& params, const dnnl::engine& engine,
             int64_t batch)
    : batch_(batch) {
  QBuilder builder(graph, engine, batch, quant, params);
  for (const TensorSpec& in : graph.inputs) {
    QValue& v = builder.define(in.name, in.shape, quant.activation(in.name), canonical_md(batch, in.shape, dt::u8));
    Shape shape{batch};
    shape.insert(shape.end(), in.shape.begin(), in.shape.end());
    inputs_.push_back({in.name, shape, v.mem, v.quant});
  }
  for (const NodeSpec& node : graph.nodes) {
    if (builder.absorbed(node)) continue;
    const QLayerFactory factory = find_qlayer(node.op);
    if (factory == nullptr) node.fail(RAMJET_ERR_UNSUPPORTED, "op " + node.op + " has no int8 form in the onednn backend");
    try {
      factory(node, builder);
    } catch (const dnnl::error& e) {
      node.fail(RAMJET_ERR_UNSUPPORTED, std::string("oneDNN cannot build its int8 form: ") + e.what());
    }
  }
  for (const std::string& name : graph.outputs) {
    QValue& v = builder.value(name);
    Shape shape{batch};
    shape.insert(shape.end(), v.shape.begin(), v.shape.end());
    outputs_.push_back({name, shape, builder.canonical(v), v.quant});
  }
  values_ = builder.take_values();
  for (const auto& v : values_) largest_value_bytes_ = std::max(largest_value_bytes_, product(v->shape));
  steps_ = builder.take_steps();
  scratchpad_ = dnnl::memory(md({static_cast<int64_t>(std::max<size_t>(builder.scratchpad_bytes(), 1))}, dt::u8, tag::a),
                             engine);
  for (Args* args : builder.scratchpad_users()) (*args)[DNNL_ARG_SCRATCHPAD] = scratchpad_;
}

void QPlan::refresh(dnnl::stream& stream, const QParamStore& params) {
  if (prepared_version_ == params.version()) return;
  for (auto& step : steps_) step->prepare(params, stream);
  stream.wait();
  prepared_version_ = params.version();
}

void QPlan::forward_rows(dnnl::stream& stream, const QParamStore& params, const std::vector<const float*>& inputs,
                         const std::vector<float*>& outputs) {
  refresh(stream, params);
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const HostInput& in = inputs_[i];
    quantize(inputs[i], static_cast<uint8_t*>(in.mem.get_data_handle()), product(in.shape), in.quant);
  }
  for (auto& step : steps_) step->run(stream);
  stream.wait();
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const HostOutput& out = outputs_[i];
    dequantize(static_cast<const uint8_t*>(out.mem.get_data_handle()), outputs[i], product(out.shape), out.quant);
  }
}

void QPlan::forward(dnnl::stream& stream, const QParamStore& params, ramjet::Example& inputs,
                    ramjet::Example& outputs) {
  rows_in_.resize(inputs_.size());
  rows_out_.resize(outputs_.size());
  for (size_t i = 0; i < inputs_.size(); ++i) rows_in_[i] = input_rows(inputs, inputs_[i].name);
  for (size_t i = 0; i < outputs_.size(); ++i) rows_out_[i] = output_rows(outputs, outputs_[i].name, outputs_[i].shape);
  forward_rows(stream, params, rows_in_, rows_out_);
}

}  // namespace onednn::int8
