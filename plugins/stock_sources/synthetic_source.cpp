#include "synthetic_source.hpp"


namespace stock_sources {
namespace {

template <class T>
void fill(ramjet::Tensor& t, ramjet::SeededRandom& rng, double low, double high) {
  T* p = t.data<T>();
  const int64_t n = ramjet::element_count(t.dl());
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_floating_point_v<T>) p[i] = static_cast<T>(rng.uniform(low, high));
    else p[i] = static_cast<T>(rng.integer(static_cast<int64_t>(low), static_cast<int64_t>(high)));
  }
}

// FNV-1a: a name hash that is the same on every platform and standard library.
uint64_t name_hash(const std::string& name) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : name) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

}  // namespace

SyntheticSource::SyntheticSource(const ramjet::Config& config)
    : count_(config.get<int64_t>("count")), seed_(config.seed()) {
  if (count_ < 0) throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, config.where("count") + ": must be >= 0");
  const auto& specs = config.json().value("tensors", nlohmann::json::object());
  if (!specs.is_object() || specs.empty())
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, config.where("tensors") + ": must be a non-empty object");
  for (const auto& [name, spec] : specs.items()) {
    const std::string where = config.where("tensors") + "/" + name;
    TensorSpec t;
    t.name = name;
    try {
      t.shape = spec.at("shape").get<std::vector<int64_t>>();
      t.low = spec.value("low", 0.0);
      t.high = spec.value("high", 1.0);
      const std::string dtype = spec.value("dtype", std::string("float32"));
      if (!ramjet::parse_dtype(dtype, t.dtype) ||
          !(ramjet::same_dtype(t.dtype, ramjet::dtype_of<float>()) || ramjet::same_dtype(t.dtype, ramjet::dtype_of<double>()) ||
            ramjet::same_dtype(t.dtype, ramjet::dtype_of<uint8_t>()) || ramjet::same_dtype(t.dtype, ramjet::dtype_of<int32_t>()) ||
            ramjet::same_dtype(t.dtype, ramjet::dtype_of<int64_t>())))
        throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT,
                            where + "/dtype: unsupported '" + dtype + "' (float32, float64, uint8, int32, int64)");
    } catch (const nlohmann::json::exception& e) {
      throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, where + ": " + e.what());
    }
    for (int64_t d : t.shape)
      if (d < 0) throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, where + "/shape: dimensions must be >= 0");
    if (!(t.low < t.high)) throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, where + ": low must be below high");
    tensors_.push_back(std::move(t));
  }
}

nlohmann::json SyntheticSource::element_spec() const {
  nlohmann::json spec;
  for (const auto& t : tensors_) spec[t.name] = {{"dtype", ramjet::dtype_name(t.dtype)}, {"shape", t.shape}};
  return spec;
}

void SyntheticSource::get(int64_t index, ramjet::Example& out) const {
  if (index < 0 || index >= count_)
    throw ramjet::Error(RAMJET_ERR_OUT_OF_RANGE, "synthetic: element " + std::to_string(index) + " is outside [0, " +
                                                     std::to_string(count_) + ")");
  for (const auto& spec : tensors_) {
    ramjet::SeededRandom rng(seed_ ^ (static_cast<uint64_t>(index) * 0x9E3779B97F4A7C15ull) ^
                             name_hash(spec.name));
    ramjet::Tensor t = ramjet::Tensor::zeros(spec.dtype, spec.shape);
    if (ramjet::same_dtype(spec.dtype, ramjet::dtype_of<float>())) fill<float>(t, rng, spec.low, spec.high);
    else if (ramjet::same_dtype(spec.dtype, ramjet::dtype_of<double>())) fill<double>(t, rng, spec.low, spec.high);
    else if (ramjet::same_dtype(spec.dtype, ramjet::dtype_of<uint8_t>())) fill<uint8_t>(t, rng, spec.low, spec.high);
    else if (ramjet::same_dtype(spec.dtype, ramjet::dtype_of<int32_t>())) fill<int32_t>(t, rng, spec.low, spec.high);
    else fill<int64_t>(t, rng, spec.low, spec.high);
    out.set(spec.name, std::move(t));
  }
}

}  // namespace stock_sources
