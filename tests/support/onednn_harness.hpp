// What the tests of the oneDNN "cpu" backend share: a backend instance with one program driven through the C ABI,
// tensors in and out of examples, random values, and graph IR built as the core writes it.
#pragma once

#include "abi_status.hpp"
#include "ramjet/plugin/components.hpp"
#include "ramjet/plugin/example.hpp"
#include "ramjet/plugin/tensor.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace ramjet::test::cpu_backend {

using core::Example;
using test::call;
using test::Instance;
using test::Status;
using nlohmann::json;
using Shape = std::vector<int64_t>;

inline constexpr DLDataType kF32{kDLFloat, 32, 1};
inline constexpr DLDataType kI32{kDLInt, 32, 1};

// One backend thread unless a test asks for more: ctest runs tests in parallel, and OpenMP threads that spin-wait
// at every barrier crawl when two such processes share two cores. The multi-threaded path has its own tests.
inline const json kOneThread = {{"threads", 1}};
inline const json kDefaultThreads = json::object();

// Owns a backend instance ("cpu" unless named) and, once compiled, one program. Every call returns its status and
// message.
class Harness {
 public:
  explicit Harness(const json& config = kOneThread, const std::string& backend = "cpu");
  ~Harness();
  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;

  Status compile(const json& graph, const json& options);
  Status forward(Example& inputs, Example& outputs, bool training, uint64_t seed = 7);
  Status backward(float loss_scale = 1.0f, bool accumulate = false, ramjet_grad_ready_fn ready = nullptr,
                  void* user = nullptr, int32_t* nonfinite = nullptr, ramjet_grad_rows_ready_fn rows_ready = nullptr);
  Status update(int64_t step, float lr, float gradient_scale = 1.0f);
  Status get_state(const char* which, Example& out);
  Status set_state(const char* which, Example& values);
  Status set_taps(const json& names, ramjet_tap_fn fn, void* user);
  // get_state as an example of copies (gradients are views that die with the program).
  Example state(const char* which);

 private:
  const ramjet_backend_vtable& vt() const { return backend_->table(); }

  core::PluginRegistry registry_;
  std::optional<Instance<ramjet_backend_vtable>> backend_;
  ramjet_program* program_ = nullptr;
};

// Why backend `name` cannot be made on this machine (the text of its creation error: "no CUDA device: ..."), or ""
// when it can. Tests of a device backend skip with it.
std::string backend_unavailable(const std::string& name);

// ---- tensors ----------------------------------------------------------------------------------------------

int64_t count_of(const Shape& s);

// A float32 tensor; `put` with a dtype copies values of any element type.
void put(Example& e, const std::string& name, const Shape& shape, const std::vector<float>& values);
template <class T>
void put(Example& e, const std::string& name, DLDataType dtype, const Shape& shape, const std::vector<T>& values) {
  auto t = core::make_tensor(dtype, shape);
  std::copy(values.begin(), values.end(), static_cast<T*>(t->dl_tensor.data));
  e.set(name, std::move(t));
}
void put_labels(Example& e, const std::vector<int32_t>& labels, const std::string& name = "label");

// A float32 tensor's values (a failure and none when it is missing); a float32 scalar.
std::vector<float> values(Example& e, const std::string& name);
float scalar(Example& e, const char* name);

std::vector<float> uniform(size_t n, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f);

// Relative distance of two vectors: |a - b| / max(|a|, |b|); 1e30 when their sizes differ.
double distance(const std::vector<float>& a, const std::vector<float>& b);

// Taps: a ramjet_tap_fn that keeps a copy of each tapped float32 value under its name (user: a TapLog).
struct TapLog {
  std::map<std::string, std::vector<float>> seen;
};
ramjet_status record_tap(void* user, const char* name, const DLTensor* value, ramjet_error* error);

// A batch of `n` for graph input "x", uniform in [-1, 1], with labels: class ids below `classes`, or (when
// `target_shape` is given) float targets "target" in [0, 1] for regressions.
Example batch_of(const Shape& shape, int64_t n, int64_t classes, uint32_t seed, const Shape& target_shape = {});

// A batch of `n` for any graph: float inputs uniform in [-1, 1] or int32 token IDs below `vocabulary`, by the
// graph's inputs; labels as its loss wants them (int32 classes below `classes` in the labels' shape, or float
// targets in [0, 1]).
Example batch_for_graph(const json& ir, int64_t n, int64_t vocabulary, int64_t classes, uint32_t seed);

// Two classes told apart by the image's mean: +0.3 or -0.3 plus uniform noise in [-1, 1], as "x" and "label".
Example separable_batch(int64_t n, const Shape& shape, std::mt19937& rng);

// ---- graphs -----------------------------------------------------------------------------------------------

// Builds graph IR as the core writes it.
struct Ir {
  json j = {{"inputs", json::array()}, {"nodes", json::array()}, {"params", json::object()}};

  Ir& input(const std::string& name, const Shape& shape);
  Ir& node(const std::string& name, const std::string& op, const std::vector<std::string>& inputs, const Shape& shape,
           const json& attrs = json::object(), const json& params = json::object());
  Ir& param(const std::string& name, const Shape& shape);
  // conv2d with its kernel [kh, kw, in / groups, filters] and a bias unless attrs say "use_bias": false; `attrs`
  // needs kernel and filters.
  Ir& conv(const std::string& name, const std::string& in, int64_t in_channels, const Shape& shape, json attrs);
  Ir& dense(const std::string& name, const std::string& in, int64_t features, int64_t units,
            const std::string& activation = "linear", bool use_bias = true);
  // batch_norm: the moving statistics are parameters that do not learn.
  Ir& batch_norm(const std::string& name, const std::string& in, const Shape& shape);

  json classifier(const std::string& output) const;  // int32 "label", sparse softmax cross-entropy
  json regression(const std::string& output, const std::string& loss) const;  // float32 "target"
  json inference(const std::string& output) const;

 private:
  json weights(const std::string& name, int64_t outputs, bool use_bias);
};

}  // namespace ramjet::test::cpu_backend
