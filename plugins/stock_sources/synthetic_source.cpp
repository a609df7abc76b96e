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

// One entry of "tensors".
ramjet::Fields tensor_fields() {
  using ramjet::Field;
  return {Field::array("shape").required().rule([](const nlohmann::json& v) -> std::optional<std::string> {
            for (const auto& d : v)
              if (!d.is_number_integer() || d.get<int64_t>() < 0)
                return "must hold integer dimensions >= 0, got " + ramjet::quote_value(v);
            return std::nullopt;
          }),
          Field::string("dtype").one_of({"float32", "float64", "uint8", "int32", "int64"}).fallback("float32"),
          Field::number("low").fallback(0.0).doc("values are uniform in [low, high)"),
          Field::number("high").fallback(1.0)};
}

}  // namespace

ramjet::Fields SyntheticSource::fields() {
  using ramjet::Field;
  return {Field::integer("count").required().at_least(0).doc("elements"),
          Field::object("tensors", ramjet::Fields().allow_unknown())
              .required()
              .rule([](const nlohmann::json& v) -> std::optional<std::string> {
                if (v.empty()) return "must name at least one tensor";
                return std::nullopt;
              })
              .doc("{\"<name>\": tensor_fields()}")};
}

void SyntheticSource::check(const nlohmann::json& config, ramjet::Problems& problems) {
  const ramjet::Fields fields = tensor_fields();
  for (const auto& [name, spec] : config.at("tensors").items()) {
    const std::string pointer = "/tensors/" + ramjet::pointer_token(name);
    const size_t before = problems.size();
    fields.check(spec, pointer, problems);
    if (problems.size() != before) continue;
    const nlohmann::json t = fields.with_defaults(spec);
    if (!(t.at("low").get<double>() < t.at("high").get<double>()))
      problems.push_back({pointer, "low (" + t.at("low").dump() + ") must be below high (" + t.at("high").dump() + ")"});
  }
}

// create() has checked the configuration against fields() and check(); here it is only read.
SyntheticSource::SyntheticSource(const ramjet::Config& config)
    : count_(config.get<int64_t>("count")), seed_(config.seed()) {
  const ramjet::Fields fields = tensor_fields();
  for (const auto& [name, spec] : config.json().at("tensors").items()) {
    const nlohmann::json t = fields.with_defaults(spec);
    TensorSpec out;
    out.name = name;
    out.shape = t.at("shape").get<std::vector<int64_t>>();
    out.low = t.at("low").get<double>();
    out.high = t.at("high").get<double>();
    ramjet::parse_dtype(t.at("dtype").get<std::string>(), out.dtype);
    tensors_.push_back(std::move(out));
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
