// ramjet plugin SDK — header-only C++20 helpers over abi.h.
//
// A plugin author writes one C++ class per component and one RAMJET_PLUGIN(...) line:
//
//   struct Invert {
//     explicit Invert(const ramjet::Config& config) : peak_(config.get_or("peak", 255.0)) {}
//     void apply(ramjet::Example& example, uint64_t /*seed*/) const { ... }
//     double peak_;
//   };
//   RAMJET_PLUGIN("my_plugin", "0.1.0", ramjet::transform<Invert>("invert"))
//
// Everything thrown inside a component becomes a status + message at the boundary; nothing C++ crosses it.
// What each kind's class must provide is listed above its adapter below (required members first, then optional
// ones the adapter detects).
#ifndef RAMJET_SDK_HPP
#define RAMJET_SDK_HPP

#include <ramjet/abi.h>

#include <array>
#include <atomic>
#include <concepts>
#include <cstring>
#include <limits>
#include <system_error>
#include <filesystem>
#include <memory>
#include <new>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <ramjet/sdk/atomic_file.hpp>
#include <ramjet/sdk/error.hpp>
#include <ramjet/sdk/fields.hpp>

namespace ramjet {

// ---- the host table ----------------------------------------------------------------------------------------

// Everything the SDK instantiates in a plugin is hidden explicitly, so two plugins never share a vtable or the
// host table through STB_GNU_UNIQUE symbols, whatever flags the plugin is built with.
#define RAMJET_SDK_HIDDEN [[gnu::visibility("hidden")]]

namespace detail {
// One per plugin library. Set by the entry call; read from any thread.
RAMJET_SDK_HIDDEN inline std::atomic<const ramjet_host_api*> host_table{nullptr};
}  // namespace detail

inline const ramjet_host_api& host() {
  const ramjet_host_api* table = detail::host_table.load(std::memory_order_acquire);
  if (table == nullptr) throw Error(RAMJET_ERR_INTERNAL, "ramjet host API used before the entry call");
  return *table;
}

inline void log(ramjet_log_level level, std::string_view source, std::string_view message) {
  const ramjet_host_api* table = detail::host_table.load(std::memory_order_acquire);
  if (table == nullptr) return;
  table->log(level, std::string(source).c_str(), std::string(message).c_str());
}

// ---- dtypes ------------------------------------------------------------------------------------------------

template <class T>
constexpr DLDataType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return {kDLFloat, 32, 1};
  else if constexpr (std::is_same_v<T, double>) return {kDLFloat, 64, 1};
  else if constexpr (std::is_same_v<T, uint8_t>) return {kDLUInt, 8, 1};
  else if constexpr (std::is_same_v<T, int8_t>) return {kDLInt, 8, 1};
  else if constexpr (std::is_same_v<T, int16_t>) return {kDLInt, 16, 1};
  else if constexpr (std::is_same_v<T, int32_t>) return {kDLInt, 32, 1};
  else if constexpr (std::is_same_v<T, int64_t>) return {kDLInt, 64, 1};
  else static_assert(sizeof(T) == 0, "no DLPack dtype for this C++ type");
}

inline bool same_dtype(DLDataType a, DLDataType b) { return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes; }

inline size_t dtype_bytes(DLDataType dtype) { return (size_t(dtype.bits) * dtype.lanes + 7) / 8; }

// "float32", "uint8", "bfloat16", ... (the names manifests use).
inline std::string dtype_name(DLDataType dtype) {
  std::string base;
  switch (dtype.code) {
    case kDLInt: base = "int"; break;
    case kDLUInt: base = "uint"; break;
    case kDLFloat: base = "float"; break;
    case kDLBfloat: base = "bfloat"; break;
    default: base = "code" + std::to_string(dtype.code) + "_"; break;
  }
  std::string name = base + std::to_string(dtype.bits);
  if (dtype.lanes != 1) name += "x" + std::to_string(dtype.lanes);
  return name;
}

inline bool parse_dtype(std::string_view name, DLDataType& out) {
  static constexpr std::pair<std::string_view, DLDataType> known[] = {
      {"float32", {kDLFloat, 32, 1}}, {"float64", {kDLFloat, 64, 1}}, {"float16", {kDLFloat, 16, 1}},
      {"bfloat16", {kDLBfloat, 16, 1}}, {"uint8", {kDLUInt, 8, 1}},   {"int8", {kDLInt, 8, 1}},
      {"int16", {kDLInt, 16, 1}},       {"int32", {kDLInt, 32, 1}},   {"int64", {kDLInt, 64, 1}}};
  for (const auto& [n, d] : known)
    if (n == name) { out = d; return true; }
  return false;
}

// Shapes come from the host, which refuses tensors whose element count overflows int64.
inline int64_t element_count(const DLTensor& t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t.ndim; ++i) n *= t.shape[i];
  return n;
}

inline bool is_contiguous(const DLTensor& t) {
  if (t.strides == nullptr) return true;
  int64_t expected = 1;
  for (int32_t i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] != 1 && t.strides[i] != expected) return false;
    expected *= t.shape[i];
  }
  return true;
}

// Typed pointer to the first element, checking the dtype (CPU tensors).
template <class T>
T* data_as(DLTensor& t) {
  if (!same_dtype(t.dtype, dtype_of<T>()))
    throw Error(RAMJET_ERR_UNSUPPORTED, "tensor has dtype " + dtype_name(t.dtype) + ", expected " +
                                            dtype_name(dtype_of<T>()));
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

// ---- randomness ---------------------------------------------------------------------------------------------

// A small, fast generator for per-element randomness. Seed it with the seed the host passes to apply(); the same
// seed always gives the same draws, whatever thread runs the element.
class SeededRandom {
 public:
  explicit SeededRandom(uint64_t seed) : state_(seed) {}
  uint64_t next_u64() {  // SplitMix64
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }  // [0, 1)
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  bool bernoulli(double p) { return uniform() < p; }
  int64_t integer(int64_t lo, int64_t hi) {  // [lo, hi); lo when the range is empty
    if (hi <= lo) return lo;
    const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
    return static_cast<int64_t>(static_cast<uint64_t>(lo) + next_u64() % span);
  }

 private:
  uint64_t state_;
};

// ---- tensors and examples ----------------------------------------------------------------------------------

// Owns one DLManagedTensor; moving hands the ownership on.
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(DLManagedTensor* owned) : owned_(owned) {}
  Tensor(Tensor&& other) noexcept : owned_(std::exchange(other.owned_, nullptr)) {}
  Tensor& operator=(Tensor&& other) noexcept {
    if (this != &other) reset(std::exchange(other.owned_, nullptr));
    return *this;
  }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  ~Tensor() { reset(nullptr); }

  // A zero-filled, contiguous CPU tensor allocated by the host.
  static Tensor zeros(DLDataType dtype, std::span<const int64_t> shape) {
    DLManagedTensor* t = host().tensor_new(dtype, static_cast<int32_t>(shape.size()), shape.data());
    if (t == nullptr) throw Error(RAMJET_ERR_OUT_OF_MEMORY, "cannot allocate a tensor");
    return Tensor(t);
  }
  static Tensor zeros(DLDataType dtype, std::initializer_list<int64_t> shape) {
    return zeros(dtype, std::span<const int64_t>(shape.begin(), shape.size()));
  }

  DLTensor& dl() { return owned_->dl_tensor; }
  template <class T>
  T* data() { return data_as<T>(dl()); }
  DLManagedTensor* release() { return std::exchange(owned_, nullptr); }
  explicit operator bool() const { return owned_ != nullptr; }

 private:
  void reset(DLManagedTensor* next) {
    if (owned_ != nullptr && owned_->deleter != nullptr) owned_->deleter(owned_);
    owned_ = next;
  }
  DLManagedTensor* owned_ = nullptr;
};

// A non-owning view of a host example: named tensors in insertion order.
class Example {
 public:
  explicit Example(ramjet_example* raw) : raw_(raw) {}
  size_t size() const { return host().example_size(raw_); }
  std::string_view name(size_t i) const {
    const char* n = host().example_name(raw_, i);
    return n ? std::string_view(n) : std::string_view();
  }
  DLTensor* at(size_t i) { return host().example_at(raw_, i); }
  // Names are passed to the host as C strings; std::string keys avoid a copy on this per-element path.
  DLTensor* find(const char* name) { return host().example_find(raw_, name); }
  DLTensor* find(const std::string& name) { return find(name.c_str()); }
  DLTensor& get(const char* name) {
    DLTensor* t = find(name);
    if (t == nullptr) throw Error(RAMJET_ERR_INVALID_ARGUMENT, std::string("the example has no tensor named '") + name + "'");
    return *t;
  }
  DLTensor& get(const std::string& name) { return get(name.c_str()); }
  void set(const char* name, Tensor&& tensor) {
    ramjet_status s = host().example_set(raw_, name, tensor.release());
    if (s != RAMJET_OK) throw Error(s, std::string("cannot set tensor '") + name + "'");
  }
  void set(const std::string& name, Tensor&& tensor) { set(name.c_str(), std::move(tensor)); }
  void remove(const char* name) { host().example_remove(raw_, name); }
  void remove(const std::string& name) { remove(name.c_str()); }
  ramjet_example* raw() { return raw_; }

 private:
  ramjet_example* raw_;
};

inline void assign(ramjet_buffer* buffer, std::string_view bytes) {
  ramjet_status s = host().buffer_assign(buffer, bytes.data(), bytes.size());
  if (s != RAMJET_OK) throw Error(s, "cannot fill a host buffer");
}

// ---- configuration -----------------------------------------------------------------------------------------

// A component's JSON configuration plus where it came from, so errors name the manifest and JSON pointer.
class Config {
 public:
  explicit Config(const ramjet_create_info& info)
      : where_(info.where ? info.where : "<config>"), base_dir_(info.base_dir ? info.base_dir : ""),
        seed_(info.seed), num_threads_(info.num_threads) {
    if (info.struct_size < RAMJET_CREATE_INFO_V1_SIZE)
      throw Error(RAMJET_ERR_VERSION_MISMATCH, "ramjet_create_info from the host is too small");
    try {
      json_ = nlohmann::json::parse(info.config_json ? info.config_json : "{}");
    } catch (const std::exception& e) {
      throw Error(RAMJET_ERR_INVALID_ARGUMENT, where_ + ": configuration is not JSON: " + e.what());
    }
    if (!json_.is_object()) throw Error(RAMJET_ERR_INVALID_ARGUMENT, where_ + ": configuration must be an object");
  }

  const nlohmann::json& json() const { return json_; }
  bool has(std::string_view key) const { return json_.contains(std::string(key)); }
  // "<manifest>#/pointer/key" for messages.
  std::string where(std::string_view key) const { return where_ + "/" + std::string(key); }
  // "<manifest>#/pointer" + a pointer relative to this configuration ("" for the configuration itself).
  std::string where_pointer(std::string_view pointer) const { return where_ + std::string(pointer); }
  uint64_t seed() const { return seed_; }
  uint32_t num_threads() const { return num_threads_; }

  template <class T>
  T get(std::string_view key) const {
    auto it = json_.find(std::string(key));
    if (it == json_.end()) throw Error(RAMJET_ERR_INVALID_ARGUMENT, where(key) + ": required field is missing");
    return convert<T>(*it, key);
  }
  template <class T>
  T get_or(std::string_view key, T fallback) const {
    auto it = json_.find(std::string(key));
    return it == json_.end() ? fallback : convert<T>(*it, key);
  }
  // A path field, resolved against the manifest's directory when relative.
  std::filesystem::path path(std::string_view key) const { return resolve(get<std::string>(key)); }
  // Any path (e.g. an entry of an array field), resolved the same way.
  std::filesystem::path resolve(const std::filesystem::path& p) const {
    return p.is_absolute() || base_dir_.empty() ? p : base_dir_ / p;
  }

 private:
  template <class T>
  T convert(const nlohmann::json& value, std::string_view key) const {
    auto fail = [&](const std::string& why) { return Error(RAMJET_ERR_INVALID_ARGUMENT, where(key) + ": " + why); };
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      // Integers must be integral and in range: no silent truncation, wrap-around or float-to-int UB.
      long double v;
      if (value.is_number_integer()) v = value.is_number_unsigned() ? static_cast<long double>(value.get<uint64_t>())
                                                                    : static_cast<long double>(value.get<int64_t>());
      else if (value.is_number_float()) v = value.get<double>();
      else throw fail("expected an integer, got " + std::string(value.type_name()));
      if (v != static_cast<long double>(static_cast<int64_t>(v)) && !value.is_number_unsigned())
        throw fail("expected an integer, got " + value.dump());
      if (v < static_cast<long double>(std::numeric_limits<T>::min()) ||
          v > static_cast<long double>(std::numeric_limits<T>::max()))
        throw fail(value.dump() + " is out of range");
      return static_cast<T>(v);
    } else if constexpr (std::is_floating_point_v<T>) {
      if (!value.is_number()) throw fail("expected a number, got " + std::string(value.type_name()));
      return value.get<T>();
    } else {
      try {
        return value.get<T>();
      } catch (const std::exception& e) {
        throw fail(e.what());
      }
    }
  }

  nlohmann::json json_;
  std::string where_;
  std::filesystem::path base_dir_;
  uint64_t seed_;
  uint32_t num_threads_;
};

// ---- the boundary ------------------------------------------------------------------------------------------

namespace detail {

inline void report(ramjet_error* error, ramjet_status status, const char* message) noexcept {
  const ramjet_host_api* table = host_table.load(std::memory_order_acquire);
  if (table != nullptr && error != nullptr) table->error_set(error, status, message);
}

// Runs `body`, turning every exception into a status and message.
template <class F>
ramjet_status guard(ramjet_error* error, F&& body) noexcept {
  try {
    body();
    return RAMJET_OK;
  } catch (const Error& e) {
    const ramjet_status status = e.status() == RAMJET_OK ? RAMJET_ERR_INTERNAL : e.status();
    report(error, status, e.what());
    return status;
  } catch (const nlohmann::json::exception& e) {
    report(error, RAMJET_ERR_INVALID_ARGUMENT, e.what());
    return RAMJET_ERR_INVALID_ARGUMENT;
  } catch (const std::system_error& e) {  // includes std::filesystem::filesystem_error and ios_base::failure
    report(error, RAMJET_ERR_IO, e.what());
    return RAMJET_ERR_IO;
  } catch (const std::bad_alloc&) {
    report(error, RAMJET_ERR_OUT_OF_MEMORY, "out of memory");
    return RAMJET_ERR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    report(error, RAMJET_ERR_INTERNAL, e.what());
    return RAMJET_ERR_INTERNAL;
  } catch (...) {
    report(error, RAMJET_ERR_INTERNAL, "unknown exception");
    return RAMJET_ERR_INTERNAL;
  }
}

// A component class may declare its configuration (`static ramjet::Fields fields();`) and add rules across fields
// (`static void check(const nlohmann::json& config, ramjet::Problems& problems);`, run when the fields are fine).
template <class T>
concept DeclaresFields = requires { { T::fields() } -> std::convertible_to<Fields>; };
template <class T>
concept ChecksConfig = requires(const nlohmann::json& config, Problems& problems) { T::check(config, problems); };

template <class T>
Problems config_problems(const nlohmann::json& config) {
  Problems problems;
  if constexpr (DeclaresFields<T>) T::fields().check(config, "", problems);
  if constexpr (ChecksConfig<T>)
    if (problems.empty()) T::check(config, problems);
  return problems;
}

// The check_config slot (ABI 2): the same judgement create() applies, without creating anything.
template <class T>
ramjet_status check_config(const ramjet_create_info* info, ramjet_buffer* out, ramjet_error* error) noexcept {
  return guard(error, [&] {
    if (info == nullptr || out == nullptr) throw Error(RAMJET_ERR_INVALID_ARGUMENT, "null check_config arguments");
    Config config(*info);
    assign(out, problems_to_json(config_problems<T>(config.json())).dump());
  });
}

template <class T>
inline constexpr auto check_config_slot = [] {
  if constexpr (DeclaresFields<T> || ChecksConfig<T>) return &check_config<T>;
  else return static_cast<decltype(&check_config<T>)>(nullptr);
}();

template <class T>
ramjet_status create(const ramjet_create_info* info, void** out_self, ramjet_error* error) noexcept {
  return guard(error, [&] {
    if (info == nullptr || out_self == nullptr) throw Error(RAMJET_ERR_INVALID_ARGUMENT, "null create arguments");
    Config config(*info);
    if constexpr (DeclaresFields<T> || ChecksConfig<T>) {
      const Problems problems = config_problems<T>(config.json());
      if (!problems.empty()) {
        std::string text;
        for (const auto& p : problems) text += (text.empty() ? "" : "\n") + config.where_pointer(p.pointer) + ": " + p.message;
        throw Error(RAMJET_ERR_INVALID_ARGUMENT, text);
      }
    }
    *out_self = new T(config);
  });
}

template <class T>
void destroy(void* self) noexcept {
  delete static_cast<T*>(self);
}

template <class T>
T& self_of(void* self) { return *static_cast<T*>(self); }

template <class T>
ramjet_component component(ramjet_component_kind kind, const char* name, const void* vtable) {
  return {sizeof(ramjet_component), RAMJET_ABI_VERSION, kind, 0, name, vtable, check_config_slot<T>};
}

template <size_t N>
std::array<const ramjet_component*, N> pointers_to(const ramjet_component (&components)[N]) {
  std::array<const ramjet_component*, N> out{};
  for (size_t i = 0; i < N; ++i) out[i] = &components[i];
  return out;
}

// The oldest ABI version this SDK's plugins can still serve. Raise it only when a version is dropped.
inline constexpr uint32_t kAbiMin = 1;

inline ramjet_status negotiate(const ramjet_host_api* host, uint32_t host_min, uint32_t host_max,
                               ramjet_plugin* plugin, const ramjet_plugin** out, ramjet_error* error) noexcept {
  if (host == nullptr || out == nullptr || plugin == nullptr) return RAMJET_ERR_INVALID_ARGUMENT;
  if (host->struct_size < RAMJET_HOST_API_V1_SIZE) return RAMJET_ERR_VERSION_MISMATCH;  // cannot even report
  host_table.store(host, std::memory_order_release);
  return guard(error, [&] {
    // The newest version both sides speak.
    const uint32_t chosen = std::min<uint32_t>(RAMJET_ABI_VERSION, host_max);
    if (chosen < std::max<uint32_t>(kAbiMin, host_min))
      throw Error(RAMJET_ERR_VERSION_MISMATCH, "plugin '" + std::string(plugin->name ? plugin->name : "?") +
                                                   "' speaks ABI " + std::to_string(kAbiMin) + ".." +
                                                   std::to_string(RAMJET_ABI_VERSION) + ", the host speaks " +
                                                   std::to_string(host_min) + ".." + std::to_string(host_max));
    plugin->abi_version = chosen;
    *out = plugin;
  });
}

}  // namespace detail

// An optional vtable slot: the adapter function when the component class has the member, else null. The
// discarded branch is never instantiated, so a class without the member still compiles.
#define RAMJET_SDK_OPTIONAL_SLOT(present, function)                 \
  [] {                                                              \
    if constexpr (present) return function;                         \
    else return static_cast<decltype(function)>(nullptr);           \
  }()

// ---- data_source -------------------------------------------------------------------------------------------
// Required: T(const Config&); and either
//   random access: int64_t cardinality() const; void get(int64_t index, Example& out) const;  (thread-safe)
//   sequential:    bool next(Example& out);   (false at the end)
// Optional: nlohmann::json element_spec() const; void reset(uint64_t epoch); void shard(int64_t count, int64_t index);
//           std::string save_state() const; void restore_state(std::string_view state).

template <class T>
concept RandomAccessSource = requires(const T& t, int64_t i, Example& ex) {
  { t.cardinality() } -> std::convertible_to<int64_t>;
  t.get(i, ex);
};
template <class T>
concept SequentialSource = requires(T& t, Example& ex) {
  { t.next(ex) } -> std::same_as<bool>;
};

template <class T>
struct DataSourceAdapter {
  static ramjet_status cardinality(void* self, int64_t* out, ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      if constexpr (RandomAccessSource<T>) *out = detail::self_of<T>(self).cardinality();
      else *out = -1;
    });
  }
  static ramjet_status element_spec(void* self, ramjet_buffer* out, ramjet_error* error) noexcept {
    return detail::guard(error, [&] { assign(out, detail::self_of<T>(self).element_spec().dump()); });
  }
  static ramjet_status get(void* self, int64_t index, ramjet_example* out, ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      Example ex(out);
      static_cast<const T*>(self)->get(index, ex);  // the const, thread-safe overload
    });
  }
  static ramjet_status next(void* self, ramjet_example* out, int32_t* has, ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      Example ex(out);
      *has = detail::self_of<T>(self).next(ex) ? 1 : 0;
    });
  }
  static ramjet_status reset(void* self, uint64_t epoch, ramjet_error* error) noexcept {
    return detail::guard(error, [&] { detail::self_of<T>(self).reset(epoch); });
  }
  static ramjet_status shard(void* self, int64_t count, int64_t index, ramjet_error* error) noexcept {
    return detail::guard(error, [&] { detail::self_of<T>(self).shard(count, index); });
  }
  static ramjet_status save_state(void* self, ramjet_buffer* out, ramjet_error* error) noexcept {
    return detail::guard(error, [&] { assign(out, detail::self_of<T>(self).save_state()); });
  }
  static ramjet_status restore_state(void* self, const void* state, size_t size, ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      detail::self_of<T>(self).restore_state(std::string_view(static_cast<const char*>(state), size));
    });
  }
};

template <class T>
RAMJET_SDK_HIDDEN inline constexpr ramjet_data_source_vtable data_source_vtable = {
    sizeof(ramjet_data_source_vtable), RAMJET_ABI_VERSION, &detail::create<T>, &detail::destroy<T>,
    &DataSourceAdapter<T>::cardinality,
    RAMJET_SDK_OPTIONAL_SLOT((requires(const T& t) { t.element_spec(); }), &DataSourceAdapter<T>::element_spec),
    RAMJET_SDK_OPTIONAL_SLOT((RandomAccessSource<T>), &DataSourceAdapter<T>::get),
    RAMJET_SDK_OPTIONAL_SLOT((SequentialSource<T>), &DataSourceAdapter<T>::next),
    RAMJET_SDK_OPTIONAL_SLOT((requires(T& t) { t.reset(uint64_t{}); }), &DataSourceAdapter<T>::reset),
    RAMJET_SDK_OPTIONAL_SLOT((requires(T& t) { t.shard(int64_t{}, int64_t{}); }), &DataSourceAdapter<T>::shard),
    RAMJET_SDK_OPTIONAL_SLOT((requires(const T& t) { { t.save_state() } -> std::convertible_to<std::string>; }), &DataSourceAdapter<T>::save_state),
    RAMJET_SDK_OPTIONAL_SLOT((requires(T& t) { t.restore_state(std::string_view{}); }), &DataSourceAdapter<T>::restore_state)};

template <class T>
  requires RandomAccessSource<T> || SequentialSource<T>
ramjet_component data_source(const char* name) {
  return detail::component<T>(RAMJET_KIND_DATA_SOURCE, name, &data_source_vtable<T>);
}

// ---- transform ---------------------------------------------------------------------------------------------
// Required: T(const Config&); void apply(Example& example, uint64_t seed) const;  (thread-safe, pure)

template <class T>
struct TransformAdapter {
  static ramjet_status apply(void* self, ramjet_example* example, uint64_t seed, ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      Example ex(example);
      static_cast<const T*>(self)->apply(ex, seed);
    });
  }
};

template <class T>
RAMJET_SDK_HIDDEN inline constexpr ramjet_transform_vtable transform_vtable = {sizeof(ramjet_transform_vtable), RAMJET_ABI_VERSION,
                                                             &detail::create<T>, &detail::destroy<T>,
                                                             &TransformAdapter<T>::apply};

template <class T>
  requires requires(const T& t, Example& ex, uint64_t seed) { t.apply(ex, seed); }
ramjet_component transform(const char* name) {
  return detail::component<T>(RAMJET_KIND_TRANSFORM, name, &transform_vtable<T>);
}

// ---- precision_policy --------------------------------------------------------------------------------------
// Required: T(const Config&); ramjet_layer_dtypes layer_dtypes(const nlohmann::json& layer) const;
//           float loss_scale() const; bool update(bool found_nonfinite)  (returns: skip this step)
// Optional: std::string save_state() const; void restore_state(std::string_view).

template <class T>
struct PrecisionPolicyAdapter {
  static ramjet_status layer_dtypes(void* self, const char* layer_json, ramjet_layer_dtypes* out,
                                    ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      ramjet_layer_dtypes d = detail::self_of<T>(self).layer_dtypes(nlohmann::json::parse(layer_json));
      d.abi_version = RAMJET_ABI_VERSION;
      const uint32_t room = out->struct_size;  // the caller's allocation: never write past it
      if (room < RAMJET_LAYER_DTYPES_V1_SIZE) throw Error(RAMJET_ERR_VERSION_MISMATCH, "layer_dtypes: out struct too small");
      d.struct_size = static_cast<uint32_t>(std::min<size_t>(room, sizeof d));
      std::memcpy(out, &d, d.struct_size);
    });
  }
  static ramjet_status loss_scale(void* self, float* out, ramjet_error* error) noexcept {
    return detail::guard(error, [&] { *out = detail::self_of<T>(self).loss_scale(); });
  }
  static ramjet_status update(void* self, int32_t nonfinite, int32_t* skip, ramjet_error* error) noexcept {
    return detail::guard(error, [&] { *skip = detail::self_of<T>(self).update(nonfinite != 0) ? 1 : 0; });
  }
  static ramjet_status save_state(void* self, ramjet_buffer* out, ramjet_error* error) noexcept {
    return detail::guard(error, [&] { assign(out, detail::self_of<T>(self).save_state()); });
  }
  static ramjet_status restore_state(void* self, const void* state, size_t size, ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      detail::self_of<T>(self).restore_state(std::string_view(static_cast<const char*>(state), size));
    });
  }
};

template <class T>
RAMJET_SDK_HIDDEN inline constexpr ramjet_precision_policy_vtable precision_policy_vtable = {
    sizeof(ramjet_precision_policy_vtable), RAMJET_ABI_VERSION, &detail::create<T>, &detail::destroy<T>,
    &PrecisionPolicyAdapter<T>::layer_dtypes, &PrecisionPolicyAdapter<T>::loss_scale, &PrecisionPolicyAdapter<T>::update,
    RAMJET_SDK_OPTIONAL_SLOT((requires(const T& t) { t.save_state(); }), &PrecisionPolicyAdapter<T>::save_state),
    RAMJET_SDK_OPTIONAL_SLOT((requires(T& t) { t.restore_state(std::string_view{}); }), &PrecisionPolicyAdapter<T>::restore_state)};

template <class T>
ramjet_component precision_policy(const char* name) {
  return detail::component<T>(RAMJET_KIND_PRECISION_POLICY, name, &precision_policy_vtable<T>);
}

// ---- strategy ----------------------------------------------------------------------------------------------
// Required: T(const Config&); int rank() const; int world_size() const;
//           void broadcast(DLTensor&, const ramjet_collective_args&); void all_reduce(DLTensor&, const ramjet_collective_args&);
//           void barrier();
// Optional: uint64_t all_reduce_start(DLTensor&, const ramjet_collective_args&); void all_reduce_wait(uint64_t handle).

template <class T>
struct StrategyAdapter {
  static ramjet_status rank(void* self, int32_t* out, ramjet_error* error) noexcept {
    return detail::guard(error, [&] { *out = detail::self_of<T>(self).rank(); });
  }
  static ramjet_status world_size(void* self, int32_t* out, ramjet_error* error) noexcept {
    return detail::guard(error, [&] { *out = detail::self_of<T>(self).world_size(); });
  }
  static ramjet_status broadcast(void* self, DLTensor* t, const ramjet_collective_args* args,
                                 ramjet_error* error) noexcept {
    return detail::guard(error, [&] { detail::self_of<T>(self).broadcast(*t, checked(args)); });
  }
  static ramjet_status all_reduce(void* self, DLTensor* t, const ramjet_collective_args* args,
                                  ramjet_error* error) noexcept {
    return detail::guard(error, [&] { detail::self_of<T>(self).all_reduce(*t, checked(args)); });
  }
  static const ramjet_collective_args& checked(const ramjet_collective_args* args) {
    if (args == nullptr || args->struct_size < RAMJET_COLLECTIVE_ARGS_V1_SIZE)
      throw Error(RAMJET_ERR_VERSION_MISMATCH, "collective arguments missing or too small");
    return *args;
  }
  static ramjet_status barrier(void* self, ramjet_error* error) noexcept {
    return detail::guard(error, [&] { detail::self_of<T>(self).barrier(); });
  }
  static ramjet_status all_reduce_start(void* self, DLTensor* t, const ramjet_collective_args* args,
                                        uint64_t* handle, ramjet_error* error) noexcept {
    return detail::guard(error, [&] { *handle = detail::self_of<T>(self).all_reduce_start(*t, checked(args)); });
  }
  static ramjet_status all_reduce_wait(void* self, uint64_t handle, ramjet_error* error) noexcept {
    return detail::guard(error, [&] { detail::self_of<T>(self).all_reduce_wait(handle); });
  }
};

template <class T>
inline constexpr bool has_async_all_reduce = requires(T& t, DLTensor& d, const ramjet_collective_args& a) {
  t.all_reduce_start(d, a);
  t.all_reduce_wait(uint64_t{});
};

template <class T>
RAMJET_SDK_HIDDEN inline constexpr ramjet_strategy_vtable strategy_vtable = {
    sizeof(ramjet_strategy_vtable), RAMJET_ABI_VERSION, &detail::create<T>, &detail::destroy<T>,
    &StrategyAdapter<T>::rank, &StrategyAdapter<T>::world_size, &StrategyAdapter<T>::broadcast,
    &StrategyAdapter<T>::all_reduce, &StrategyAdapter<T>::barrier,
    RAMJET_SDK_OPTIONAL_SLOT((has_async_all_reduce<T>), &StrategyAdapter<T>::all_reduce_start),
    RAMJET_SDK_OPTIONAL_SLOT((has_async_all_reduce<T>), &StrategyAdapter<T>::all_reduce_wait)};

template <class T>
ramjet_component strategy(const char* name) {
  return detail::component<T>(RAMJET_KIND_STRATEGY, name, &strategy_vtable<T>);
}

// ---- quantizer and exporter --------------------------------------------------------------------------------
// Quantizer: T(const Config&); void observe(std::string_view tensor, const DLTensor& value);
//            nlohmann::json quantize(const nlohmann::json& graph, Example& params, Example& out_params);
// Exporter:  T(const Config&); void export_model(const nlohmann::json& graph, Example& params,
//                                               const std::filesystem::path& path);

template <class T>
struct QuantizerAdapter {
  static ramjet_status observe(void* self, const char* name, const DLTensor* value, ramjet_error* error) noexcept {
    return detail::guard(error, [&] { detail::self_of<T>(self).observe(name, *value); });
  }
  static ramjet_status quantize(void* self, const char* graph, ramjet_example* params, ramjet_buffer* out_graph,
                                ramjet_example* out_params, ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      Example in(params), out(out_params);
      assign(out_graph, detail::self_of<T>(self).quantize(nlohmann::json::parse(graph), in, out).dump());
    });
  }
};

template <class T>
RAMJET_SDK_HIDDEN inline constexpr ramjet_quantizer_vtable quantizer_vtable = {sizeof(ramjet_quantizer_vtable), RAMJET_ABI_VERSION,
                                                             &detail::create<T>, &detail::destroy<T>,
                                                             &QuantizerAdapter<T>::observe,
                                                             &QuantizerAdapter<T>::quantize};

template <class T>
ramjet_component quantizer(const char* name) {
  return detail::component<T>(RAMJET_KIND_QUANTIZER, name, &quantizer_vtable<T>);
}

template <class T>
struct ExporterAdapter {
  static ramjet_status export_model(void* self, const char* graph, ramjet_example* params, const char* path,
                                    ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      Example in(params);
      detail::self_of<T>(self).export_model(nlohmann::json::parse(graph), in, std::filesystem::path(path));
    });
  }
};

template <class T>
RAMJET_SDK_HIDDEN inline constexpr ramjet_exporter_vtable exporter_vtable = {sizeof(ramjet_exporter_vtable), RAMJET_ABI_VERSION,
                                                           &detail::create<T>, &detail::destroy<T>,
                                                           &ExporterAdapter<T>::export_model};

template <class T>
ramjet_component exporter(const char* name) {
  return detail::component<T>(RAMJET_KIND_EXPORTER, name, &exporter_vtable<T>);
}

// ---- backend -----------------------------------------------------------------------------------------------
// Required: T(const Config&); a nested type T::Program and
//   std::unique_ptr<typename T::Program> compile(const nlohmann::json& graph, const nlohmann::json& options);
// and on T::Program:
//   void forward(const ramjet_forward_args& args, Example& inputs, Example& outputs);
//   void backward(const ramjet_backward_args& args);
//   void optimizer_update(const ramjet_update_args& args);
//   void get_state(std::string_view which, Example& out); void set_state(std::string_view which, Example& values);
// Optional on T::Program: void set_taps(const std::vector<std::string>& names, ramjet_tap_fn fn, void* user)
// (call the tap with a ramjet_error and throw a ramjet::Error carrying its status if it fails).
// Optional on T: static void check_options(const nlohmann::json& options, ramjet::Problems& problems) — judges
// compile options for `ramjet validate` (pointers relative to the options object).

template <class T>
struct BackendAdapter {
  using Program = typename T::Program;
  static Program& program_of(ramjet_program* p) { return *reinterpret_cast<Program*>(p); }

  static ramjet_status compile(void* self, const char* graph, const char* options, ramjet_program** out,
                               ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      auto program = detail::self_of<T>(self).compile(nlohmann::json::parse(graph),
                                                      nlohmann::json::parse(options ? options : "{}"));
      *out = reinterpret_cast<ramjet_program*>(program.release());
    });
  }
  static void program_destroy(void*, ramjet_program* program) noexcept { delete reinterpret_cast<Program*>(program); }
  static ramjet_status forward(void*, ramjet_program* p, const ramjet_forward_args* args, ramjet_example* in,
                               ramjet_example* out, ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      if (args == nullptr || args->struct_size < RAMJET_FORWARD_ARGS_V1_SIZE)
        throw Error(RAMJET_ERR_VERSION_MISMATCH, "forward arguments missing or too small");
      Example i(in), o(out);
      program_of(p).forward(*args, i, o);
    });
  }
  static ramjet_status backward(void*, ramjet_program* p, const ramjet_backward_args* args,
                                ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      if (args == nullptr || args->struct_size < RAMJET_BACKWARD_ARGS_V1_SIZE)
        throw Error(RAMJET_ERR_VERSION_MISMATCH, "backward arguments missing or too small");
      program_of(p).backward(*args);
    });
  }
  static ramjet_status optimizer_update(void*, ramjet_program* p, const ramjet_update_args* args,
                                        ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      if (args == nullptr || args->struct_size < RAMJET_UPDATE_ARGS_V1_SIZE)
        throw Error(RAMJET_ERR_VERSION_MISMATCH, "update arguments missing or too small");
      program_of(p).optimizer_update(*args);
    });
  }
  static ramjet_status get_state(void*, ramjet_program* p, const char* which, ramjet_example* out,
                                 ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      Example o(out);
      program_of(p).get_state(which, o);
    });
  }
  static ramjet_status set_state(void*, ramjet_program* p, const char* which, ramjet_example* values,
                                 ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      Example v(values);
      program_of(p).set_state(which, v);
    });
  }
  static ramjet_status set_taps(void*, ramjet_program* p, const char* names_json, ramjet_tap_fn fn, void* user,
                                ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      program_of(p).set_taps(nlohmann::json::parse(names_json).get<std::vector<std::string>>(), fn, user);
    });
  }  static ramjet_status check_options(const char* options_json, ramjet_buffer* out, ramjet_error* error) noexcept {
    return detail::guard(error, [&] {
      Problems problems;
      T::check_options(nlohmann::json::parse(options_json ? options_json : "{}"), problems);
      assign(out, problems_to_json(problems).dump());
    });
  }
};

template <class T>
RAMJET_SDK_HIDDEN inline constexpr ramjet_backend_vtable backend_vtable = {
    sizeof(ramjet_backend_vtable), RAMJET_ABI_VERSION, &detail::create<T>, &detail::destroy<T>,
    &BackendAdapter<T>::compile, &BackendAdapter<T>::program_destroy, &BackendAdapter<T>::forward,
    &BackendAdapter<T>::backward, &BackendAdapter<T>::optimizer_update, &BackendAdapter<T>::get_state,
    &BackendAdapter<T>::set_state,
    RAMJET_SDK_OPTIONAL_SLOT((requires(typename T::Program& p, const std::vector<std::string>& n) { p.set_taps(n, ramjet_tap_fn{}, nullptr); }), &BackendAdapter<T>::set_taps),
    RAMJET_SDK_OPTIONAL_SLOT((requires(const nlohmann::json& options, Problems& problems) { T::check_options(options, problems); }), &BackendAdapter<T>::check_options)};

template <class T>
ramjet_component backend(const char* name) {
  return detail::component<T>(RAMJET_KIND_BACKEND, name, &backend_vtable<T>);
}

}  // namespace ramjet

#undef RAMJET_SDK_OPTIONAL_SLOT

// The plugin's one exported symbol. List the components as ramjet::<kind><Class>("name") calls.
#define RAMJET_PLUGIN(NAME, VERSION, ...)                                                                     \
  extern "C" RAMJET_EXPORT ramjet_status ramjet_plugin_entry(const ramjet_host_api* host, uint32_t host_min, \
                                                             uint32_t host_max, const ramjet_plugin** out,   \
                                                             ramjet_error* error) {                          \
    static const ramjet_component components[] = {__VA_ARGS__};                                              \
    static const auto pointers = ::ramjet::detail::pointers_to(components);                                   \
    static ramjet_plugin plugin = {sizeof(ramjet_plugin), RAMJET_ABI_VERSION, NAME, VERSION, pointers.size(), \
                                   pointers.data()};                                                          \
    return ::ramjet::detail::negotiate(host, host_min, host_max, &plugin, out, error);                        \
  }

#endif  // RAMJET_SDK_HPP
