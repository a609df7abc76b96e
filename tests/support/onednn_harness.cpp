#include "onednn_harness.hpp"

#include "ramjet/plugin/host_api.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>

namespace ramjet::test::cpu_backend {

using core::make_tensor;

Harness::Harness(const json& config, const std::string& backend)
    : registry_{core::DiscoveryOptions{{stock_plugin_dir()}, {}, {}}} {
  core::CreateArgs args;
  args.config = config;
  args.where = "test#/train";
  backend_.emplace(registry_.component(RAMJET_KIND_BACKEND, backend), args);
}

std::string backend_unavailable(const std::string& name) {
  try {
    Harness h(kOneThread, name);
    return {};
  } catch (const std::exception& e) {
    return e.what();
  }
}

Harness::~Harness() {
  if (program_ != nullptr) vt().program_destroy(backend_->self(), program_);
}

Status Harness::compile(const json& graph, const json& options) {
  const std::string g = graph.dump(), o = options.dump();
  return call([&](ramjet_error* e) { return vt().compile(backend_->self(), g.c_str(), o.c_str(), &program_, e); });
}

Status Harness::forward(Example& inputs, Example& outputs, bool training, uint64_t seed) {
  const ramjet_forward_args args{sizeof(ramjet_forward_args), RAMJET_ABI_VERSION, training ? 1 : 0, 0, seed, 0};
  return call([&](ramjet_error* e) { return vt().forward(backend_->self(), program_, &args, &inputs, &outputs, e); });
}

Status Harness::backward(float loss_scale, bool accumulate, ramjet_grad_ready_fn ready, void* user,
                         int32_t* nonfinite, ramjet_grad_rows_ready_fn rows_ready) {
  const ramjet_backward_args args{sizeof(ramjet_backward_args), RAMJET_ABI_VERSION, loss_scale, accumulate ? 1 : 0,
                                  ready, user, nonfinite, rows_ready};
  return call([&](ramjet_error* e) { return vt().backward(backend_->self(), program_, &args, e); });
}

Status Harness::update(int64_t step, float lr, float gradient_scale) {
  const ramjet_update_args args{sizeof(ramjet_update_args), RAMJET_ABI_VERSION, step, lr, gradient_scale};
  return call([&](ramjet_error* e) { return vt().optimizer_update(backend_->self(), program_, &args, e); });
}

Status Harness::get_state(const char* which, Example& out) {
  return call([&](ramjet_error* e) { return vt().get_state(backend_->self(), program_, which, &out, e); });
}

Status Harness::set_state(const char* which, Example& values) {
  return call([&](ramjet_error* e) { return vt().set_state(backend_->self(), program_, which, &values, e); });
}

Status Harness::set_taps(const json& names, ramjet_tap_fn fn, void* user) {
  const std::string n = names.dump();
  return call([&](ramjet_error* e) { return vt().set_taps(backend_->self(), program_, n.c_str(), fn, user, e); });
}

Example Harness::state(const char* which) {
  Example view;
  const Status s = get_state(which, view);
  EXPECT_TRUE(s.ok()) << s.message;
  Example copy;
  for (const auto& e : view.entries) {
    const DLTensor& t = e.tensor->dl_tensor;
    auto c = make_tensor(t.dtype, std::span<const int64_t>(t.shape, static_cast<size_t>(t.ndim)));
    std::memcpy(c->dl_tensor.data, core::first_byte(t), core::byte_size(t));
    copy.set(e.name, std::move(c));
  }
  return copy;
}

// ---- tensors ----------------------------------------------------------------------------------------------

int64_t count_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

void put(Example& e, const std::string& name, const Shape& shape, const std::vector<float>& values) {
  put(e, name, kF32, shape, values);
}

void put_labels(Example& e, const std::vector<int32_t>& labels, const std::string& name) {
  put(e, name, kI32, Shape{static_cast<int64_t>(labels.size())}, labels);
}

std::vector<float> values(Example& e, const std::string& name) {
  const DLTensor* t = e.find(name);
  if (t == nullptr) {
    ADD_FAILURE() << "no tensor '" << name << "'";
    return {};
  }
  const float* p = static_cast<const float*>(core::first_byte(*t));
  return std::vector<float>(p, p + core::element_count(*t));
}

float scalar(Example& e, const char* name) {
  const DLTensor* t = e.find(name);
  EXPECT_NE(t, nullptr) << name;
  return t ? *static_cast<const float*>(core::first_byte(*t)) : NAN;
}

std::vector<float> uniform(size_t n, std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

double distance(const std::vector<float>& a, const std::vector<float>& b) {
  double d2 = 0, a2 = 0, b2 = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    d2 += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    a2 += double(a[i]) * a[i];
    b2 += double(b[i]) * b[i];
  }
  return a.size() == b.size() ? std::sqrt(d2 / std::max({a2, b2, 1e-30})) : 1e30;
}

ramjet_status record_tap(void* user, const char* name, const DLTensor* value, ramjet_error*) {
  const float* p = static_cast<const float*>(value->data);
  int64_t n = 1;
  for (int i = 0; i < value->ndim; ++i) n *= value->shape[i];
  static_cast<TapLog*>(user)->seen[name] = std::vector<float>(p, p + n);
  return RAMJET_OK;
}

Example batch_of(const Shape& shape, int64_t n, int64_t classes, uint32_t seed, const Shape& target_shape) {
  std::mt19937 rng(seed);
  Example e;
  Shape full{n};
  full.insert(full.end(), shape.begin(), shape.end());
  put(e, "x", full, uniform(static_cast<size_t>(count_of(full)), rng));
  if (!target_shape.empty()) {
    Shape t{n};
    t.insert(t.end(), target_shape.begin(), target_shape.end());
    put(e, "target", t, uniform(static_cast<size_t>(count_of(t)), rng, 0.0f, 1.0f));
    return e;
  }
  std::vector<int32_t> labels(static_cast<size_t>(n));
  for (auto& l : labels) l = static_cast<int32_t>(rng() % static_cast<uint32_t>(classes));
  put_labels(e, labels);
  return e;
}

Example batch_for_graph(const json& ir, int64_t n, int64_t vocabulary, int64_t classes, uint32_t seed) {
  std::mt19937 rng(seed);
  Example e;
  for (const auto& in : ir["inputs"]) {
    Shape shape{n};
    for (const auto& d : in["shape"]) shape.push_back(d.get<int64_t>());
    if (in["dtype"] == "int32") {
      std::vector<int32_t> ids(static_cast<size_t>(count_of(shape)));
      for (auto& id : ids) id = static_cast<int32_t>(rng() % static_cast<uint32_t>(vocabulary));
      put(e, in["name"], kI32, shape, ids);
    } else {
      put(e, in["name"], shape, uniform(static_cast<size_t>(count_of(shape)), rng));
    }
  }
  const json& labels = ir["labels"];
  Shape shape{n};
  for (const auto& d : labels["shape"]) shape.push_back(d.get<int64_t>());
  if (labels["dtype"] == "int32") {
    std::vector<int32_t> y(static_cast<size_t>(count_of(shape)));
    for (auto& c : y) c = static_cast<int32_t>(rng() % static_cast<uint32_t>(classes));
    put(e, labels["name"], kI32, shape, y);
  } else {
    put(e, labels["name"], shape, uniform(static_cast<size_t>(count_of(shape)), rng, 0.0f, 1.0f));
  }
  return e;
}


Example separable_batch(int64_t n, const Shape& shape, std::mt19937& rng) {
  Example e;
  Shape full{n};
  full.insert(full.end(), shape.begin(), shape.end());
  const int64_t per = count_of(shape);
  std::vector<float> x = uniform(static_cast<size_t>(n * per), rng);
  std::vector<int32_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    labels[static_cast<size_t>(i)] = static_cast<int32_t>(rng() % 2);
    for (int64_t j = 0; j < per; ++j) x[static_cast<size_t>(i * per + j)] += labels[static_cast<size_t>(i)] ? 0.3f : -0.3f;
  }
  put(e, "x", full, x);
  put_labels(e, labels);
  return e;
}

// ---- graphs -----------------------------------------------------------------------------------------------

Ir& Ir::input(const std::string& name, const Shape& shape) {
  j["inputs"].push_back({{"name", name}, {"shape", shape}, {"dtype", "float32"}});
  return *this;
}

Ir& Ir::node(const std::string& name, const std::string& op, const std::vector<std::string>& inputs,
             const Shape& shape, const json& attrs, const json& params) {
  json n = {{"name", name}, {"op", op}, {"inputs", inputs}, {"shape", shape}, {"attrs", attrs}};
  if (!params.empty()) n["params"] = params;
  j["nodes"].push_back(n);
  return *this;
}

Ir& Ir::param(const std::string& name, const Shape& shape) {
  j["params"][name] = {{"shape", shape}};
  return *this;
}

Ir& Ir::conv(const std::string& name, const std::string& in, int64_t in_channels, const Shape& shape, json attrs) {
  const int64_t groups = attrs.value("groups", int64_t{1});
  const auto k = attrs["kernel"].get<Shape>();
  const int64_t filters = attrs["filters"];
  param(name + "/kernel", {k[0], k[1], in_channels / groups, filters});
  const json params = weights(name, filters, attrs.value("use_bias", true));
  return node(name, "conv2d", {in}, shape, attrs, params);
}

Ir& Ir::dense(const std::string& name, const std::string& in, int64_t features, int64_t units,
              const std::string& activation, bool use_bias) {
  param(name + "/kernel", {features, units});
  const json params = weights(name, units, use_bias);
  return node(name, "dense", {in}, {units}, {{"units", units}, {"use_bias", use_bias}, {"activation", activation}},
              params);
}

json Ir::weights(const std::string& name, int64_t outputs, bool use_bias) {
  json params = {{"kernel", name + "/kernel"}};
  if (use_bias) {
    param(name + "/bias", {outputs});
    params["bias"] = name + "/bias";
  }
  return params;
}

Ir& Ir::batch_norm(const std::string& name, const std::string& in, const Shape& shape) {
  json params;
  for (const char* part : {"gamma", "beta", "moving_mean", "moving_variance"}) {
    param(name + "/" + part, {shape.back()});
    params[part] = name + "/" + part;
  }
  return node(name, "batch_norm", {in}, shape, {{"momentum", 0.9}, {"epsilon", 1e-3}, {"trainable", {"gamma", "beta"}}},
              params);
}

json Ir::classifier(const std::string& output) const {
  json g = j;
  g["outputs"] = {output};
  g["labels"] = {{"name", "label"}, {"dtype", "int32"}};
  g["loss"] = {{"op", "sparse_softmax_cross_entropy"}, {"input", output}, {"labels", "label"}};
  return g;
}

json Ir::regression(const std::string& output, const std::string& loss) const {
  json g = j;
  g["outputs"] = {output};
  g["labels"] = {{"name", "target"}, {"dtype", "float32"}};
  g["loss"] = {{"op", loss}, {"input", output}, {"labels", "target"}};
  return g;
}

json Ir::inference(const std::string& output) const {
  json g = j;
  g["outputs"] = {output};
  return g;
}

}  // namespace ramjet::test::cpu_backend
