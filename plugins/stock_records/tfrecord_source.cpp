#include "tfrecord_source.hpp"

#include "example.pb.h"
#include "example_scan.hpp"

#include <glob.h>

#include <algorithm>
#include <cstring>
#include <limits>

namespace stock_records {
namespace {

namespace fs = std::filesystem;
using Kind = TFRecordSource::Kind;
using FeatureSpec = TFRecordSource::FeatureSpec;

bool is_pattern(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

void add_files(const ramjet::Config& config, const std::string& entry, std::vector<fs::path>& out) {
  const fs::path path = config.resolve(entry);
  if (!is_pattern(entry)) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec))
      throw ramjet::Error(RAMJET_ERR_IO, config.where("files") + ": " + path.string() + ": " +
                                             (fs::exists(path, ec) ? "not a regular file" : "no such file"));
    out.push_back(path);
    return;
  }
  glob_t matches{};
  const int rc = glob(path.c_str(), 0, nullptr, &matches);
  std::vector<fs::path> found(matches.gl_pathv, matches.gl_pathv + (rc == 0 ? matches.gl_pathc : 0));
  globfree(&matches);
  if (rc == GLOB_NOMATCH || (rc == 0 && found.empty()))
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, config.where("files") + ": pattern " + path.string() +
                                                         " matches no files");
  if (rc != 0)
    throw ramjet::Error(RAMJET_ERR_IO, config.where("files") + ": cannot expand " + path.string());
  out.insert(out.end(), found.begin(), found.end());  // glob sorts them
}

// fields() has checked the list; here the paths are resolved and the patterns expanded.
std::vector<fs::path> files_from_config(const ramjet::Config& config) {
  const nlohmann::json& files = config.json().at("files");
  std::vector<fs::path> out;
  for (const auto& f : files.is_array() ? files : nlohmann::json::array({files})) add_files(config, f.get<std::string>(), out);
  return out;
}

// One entry of "features".
ramjet::Fields feature_fields() {
  using ramjet::Field;
  return {Field::string("type").required().one_of({"bytes", "int64", "float"}),
          Field::array("shape").rule([](const nlohmann::json& v) -> std::optional<std::string> {
            int inferred = 0;
            for (const auto& d : v) {
              if (!d.is_number_integer() || d.get<int64_t>() < -1) return "dimensions must be integers >= -1";
              inferred += d.get<int64_t>() == -1;
            }
            if (inferred > 1) return "at most one dimension may be -1";
            return std::nullopt;
          }).doc("fixes the value count; absent: 1-D with as many values as the record holds"),
          Field::string("dtype").doc("bytes: any (reinterpreted); int64: an integer dtype, float32 or float64; "
                                     "float: float32 or float64")};
}

// The dtype a feature of `kind` produces by default, and whether it can produce `dtype`.
DLDataType default_dtype(Kind kind) {
  return kind == Kind::bytes ? ramjet::dtype_of<uint8_t>()
         : kind == Kind::int64 ? ramjet::dtype_of<int64_t>() : ramjet::dtype_of<float>();
}
bool can_produce(Kind kind, DLDataType d) {
  const bool float32_or_64 = d.code == kDLFloat && (d.bits == 32 || d.bits == 64);
  if (kind == Kind::float32) return float32_or_64;
  if (kind == Kind::int64) return d.code == kDLInt || (d.code == kDLUInt && d.bits == 8) || float32_or_64;
  return true;  // bytes: any dtype (the bytes are reinterpreted)
}
Kind kind_of(const std::string& type) {
  return type == "bytes" ? Kind::bytes : type == "int64" ? Kind::int64 : Kind::float32;
}

// check() has judged every entry; here they are only read.
std::vector<FeatureSpec> features_from_config(const ramjet::Config& config) {
  std::vector<FeatureSpec> out;
  for (const auto& [name, spec] : config.json().at("features").items()) {
    FeatureSpec f{name, kind_of(spec.at("type")), std::nullopt, default_dtype(kind_of(spec.at("type")))};
    if (spec.contains("dtype")) ramjet::parse_dtype(spec["dtype"].get<std::string>(), f.dtype);
    if (spec.contains("shape")) f.shape = spec["shape"].get<std::vector<int64_t>>();
    out.push_back(std::move(f));
  }
  return out;
}

const char* kind_name(ramjet::tfexample::Feature::KindCase k) {
  switch (k) {
    case ramjet::tfexample::Feature::kBytesList: return "bytes";
    case ramjet::tfexample::Feature::kFloatList: return "float";
    case ramjet::tfexample::Feature::kInt64List: return "int64";
    default: return "no values";
  }
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

template <class To, class From>
void convert_into(const From* values, int64_t count, void* out, const std::string& what) {
  To* y = static_cast<To*>(out);
  for (int64_t i = 0; i < count; ++i) {
    const From v = values[i];
    if constexpr (std::is_integral_v<To> && std::is_integral_v<From>) {
      if (v < static_cast<From>(std::numeric_limits<To>::min()) || v > static_cast<From>(std::numeric_limits<To>::max()))
        throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, what + ": value " + std::to_string(v) + " does not fit " +
                                                         ramjet::dtype_name(ramjet::dtype_of<To>()));
    }
    y[i] = static_cast<To>(v);
  }
}

template <class From>
void convert(DLDataType dtype, const From* values, int64_t count, void* out, const std::string& what) {
  using ramjet::dtype_of, ramjet::same_dtype;
  if (same_dtype(dtype, dtype_of<int64_t>())) convert_into<int64_t>(values, count, out, what);
  else if (same_dtype(dtype, dtype_of<int32_t>())) convert_into<int32_t>(values, count, out, what);
  else if (same_dtype(dtype, dtype_of<int16_t>())) convert_into<int16_t>(values, count, out, what);
  else if (same_dtype(dtype, dtype_of<int8_t>())) convert_into<int8_t>(values, count, out, what);
  else if (same_dtype(dtype, dtype_of<uint8_t>())) convert_into<uint8_t>(values, count, out, what);
  else if (same_dtype(dtype, dtype_of<float>())) convert_into<float>(values, count, out, what);
  else if (same_dtype(dtype, dtype_of<double>())) convert_into<double>(values, count, out, what);
  else throw ramjet::Error(RAMJET_ERR_INTERNAL, what + ": no conversion to " + ramjet::dtype_name(dtype));
}

}  // namespace

ramjet::Fields TFRecordSource::fields() {
  using ramjet::Field;
  return {Field::any("files").required().rule([](const nlohmann::json& v) -> std::optional<std::string> {
            if (v.is_string()) return std::nullopt;
            if (!v.is_array() || v.empty())
              return "must be a path, a glob pattern or a non-empty array of them, got " + ramjet::quote_value(v);
            for (const auto& f : v)
              if (!f.is_string()) return "entries must be strings, got " + ramjet::quote_value(f);
            return std::nullopt;
          }),
          Field::object("features", ramjet::Fields().allow_unknown())
              .required()
              .rule([](const nlohmann::json& v) -> std::optional<std::string> {
                if (v.empty()) return "must map at least one feature name to {\"type\": ...}";
                return std::nullopt;
              })};
}

void TFRecordSource::check(const nlohmann::json& config, ramjet::Problems& problems) {
  const ramjet::Fields fields = feature_fields();
  for (const auto& [name, spec] : config.at("features").items()) {
    const std::string pointer = "/features/" + ramjet::pointer_token(name);
    const size_t before = problems.size();
    fields.check(spec, pointer, problems);
    if (problems.size() != before || !spec.contains("dtype")) continue;
    const std::string dtype = spec["dtype"];
    DLDataType d{};
    if (!ramjet::parse_dtype(dtype, d) || !can_produce(kind_of(spec["type"]), d))
      problems.push_back({pointer + "/dtype", "'" + dtype + "' is not a dtype a " + spec["type"].get<std::string>() +
                                                  " feature can produce"});
  }
}

void TFRecordSource::check_files(const ramjet::Config& config, ramjet::Problems& problems) {
  ramjet::check_paths(config, "files", ramjet::PathKind::kFile, true, problems);
}

// create() has checked the configuration against fields() and check(); here the files are found.
TFRecordSource::TFRecordSource(const ramjet::Config& config)
    : files_(files_from_config(config)), features_(features_from_config(config)),
      example_(std::make_unique<ramjet::tfexample::Example>()) {}

TFRecordSource::~TFRecordSource() = default;

nlohmann::json TFRecordSource::element_spec() const {
  nlohmann::json spec = nlohmann::json::object();
  for (const auto& f : features_) {
    nlohmann::json shape = nlohmann::json::array();
    if (f.shape) {
      for (int64_t d : *f.shape) shape.push_back(d < 0 ? nlohmann::json() : nlohmann::json(d));
    } else {
      shape.push_back(nlohmann::json());
    }
    spec[f.name] = {{"dtype", ramjet::dtype_name(f.dtype)}, {"shape", shape}};
  }
  return spec;
}

bool TFRecordSource::next(ramjet::Example& out) {
  while (file_index_ < files_.size()) {
    if (!reader_) reader_ = std::make_unique<RecordReader>(files_[file_index_], offset_);
    const uint64_t at = reader_->offset();
    if (reader_->read(record_)) {
      try {
        emit(at, out);
      } catch (...) {
        reader_->seek(at);  // a bad record is reported again, never skipped silently
        throw;
      }
      return true;
    }
    reader_.reset();
    ++file_index_;
    offset_ = 0;
  }
  return false;
}

void TFRecordSource::emit(uint64_t record_offset, ramjet::Example& out) {
  const std::string where = files_[file_index_].string() + ": TFRecord at byte " + std::to_string(record_offset);
  const ExampleCounts counts = count_example_parts(record_);
  if (counts.features > kMaxFeatures)
    throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, where + ": the tf.train.Example holds more than " +
                                                     std::to_string(kMaxFeatures) + " features (field 'features')");
  if (counts.bytes_values > kMaxBytesValues)
    throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, where + ": the tf.train.Example holds more than " +
                                                     std::to_string(kMaxBytesValues) +
                                                     " bytes_list values in all its features");
  if (!example_->ParseFromString(record_))
    throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, where + ": the " + std::to_string(record_.size()) +
                                                     " data bytes are not a valid tf.train.Example");
  const auto& map = example_->features().feature();
  for (const auto& f : features_) {
    const std::string what = where + ": feature '" + f.name + "'";
    const auto it = map.find(f.name);
    if (it == map.end()) throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, what + " is missing");
    const auto& feature = it->second;
    const auto kind = feature.kind_case();
    const bool matches = kind == ramjet::tfexample::Feature::KIND_NOT_SET ||
                         (f.kind == Kind::bytes && kind == ramjet::tfexample::Feature::kBytesList) ||
                         (f.kind == Kind::int64 && kind == ramjet::tfexample::Feature::kInt64List) ||
                         (f.kind == Kind::float32 && kind == ramjet::tfexample::Feature::kFloatList);
    if (!matches)
      throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, what + " holds " + kind_name(kind) + " values, declared " +
                                                       (f.kind == Kind::bytes ? "bytes" : f.kind == Kind::int64 ? "int64" : "float"));
    // The number of output elements the record provides.
    const std::string* bytes = nullptr;
    int64_t count = 0;
    if (f.kind == Kind::bytes) {
      const int n = feature.bytes_list().value_size();
      if (n != 1)
        throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, what + " holds " + std::to_string(n) + " bytes values, expected 1");
      bytes = &feature.bytes_list().value(0);
      const size_t item = ramjet::dtype_bytes(f.dtype);
      if (bytes->size() % item != 0)
        throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, what + ": " + std::to_string(bytes->size()) +
                                                         " bytes are not a whole number of " +
                                                         ramjet::dtype_name(f.dtype) + " values");
      count = static_cast<int64_t>(bytes->size() / item);
    } else if (f.kind == Kind::int64) {
      count = feature.int64_list().value_size();
    } else {
      count = feature.float_list().value_size();
    }
    // Shape: the declared one (with -1 inferred), else 1-D.
    // Checked products: the declared dimensions come from the manifest and may be anything up to INT64_MAX.
    std::vector<int64_t> shape = f.shape ? *f.shape : std::vector<int64_t>{-1};
    int64_t known = 1;
    bool overflow = false;
    for (int64_t d : shape) overflow |= __builtin_mul_overflow(known, d < 0 ? 1 : d, &known);
    for (int64_t& d : shape)
      if (d < 0) d = !overflow && known > 0 && count % known == 0 ? count / known : -1;
    int64_t total = 1;
    for (int64_t d : shape) overflow |= __builtin_mul_overflow(total, d, &total);
    if (overflow || total != count || std::find(shape.begin(), shape.end(), -1) != shape.end())
      throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, what + " holds " + std::to_string(count) +
                                                       " values, which do not fit its shape " + shape_text(*f.shape));

    ramjet::Tensor tensor = ramjet::Tensor::zeros(f.dtype, shape);
    void* data = tensor.dl().data;
    if (f.kind == Kind::bytes) {
      if (!bytes->empty()) std::memcpy(data, bytes->data(), bytes->size());
    } else if (f.kind == Kind::int64) {
      convert(f.dtype, feature.int64_list().value().data(), count, data, what);
    } else {
      convert(f.dtype, feature.float_list().value().data(), count, data, what);
    }
    out.set(f.name, std::move(tensor));
  }
}

void TFRecordSource::reset(uint64_t) {
  reader_.reset();
  file_index_ = 0;
  offset_ = 0;
}

std::string TFRecordSource::save_state() const {
  nlohmann::json state = {{"file_index", file_index_}, {"offset", reader_ ? reader_->offset() : offset_}};
  if (file_index_ < files_.size()) state["file"] = files_[file_index_].string();
  return state.dump();
}

void TFRecordSource::restore_state(std::string_view text) {
  size_t index = 0;
  uint64_t offset = 0;
  std::string file;
  try {
    const auto state = nlohmann::json::parse(text);
    index = state.at("file_index").get<size_t>();
    offset = state.at("offset").get<uint64_t>();
    if (state.contains("file")) file = state.at("file").get<std::string>();
  } catch (const std::exception& e) {
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, std::string("tfrecord: cannot restore the saved state: ") + e.what());
  }
  if (index > files_.size() || (index == files_.size() && offset != 0))
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "tfrecord: saved state points at file " + std::to_string(index) +
                                                         " but there are " + std::to_string(files_.size()) + " files");
  if (index < files_.size() && !file.empty() && file != files_[index].string())
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "tfrecord: saved state was for " + file + " as file " +
                                                         std::to_string(index) + ", which is now " +
                                                         files_[index].string());
  std::unique_ptr<RecordReader> reader;
  if (index < files_.size()) reader = std::make_unique<RecordReader>(files_[index], offset);  // checks the offset
  reader_ = std::move(reader);
  file_index_ = index;
  offset_ = offset;
}

}  // namespace stock_records
