#include "one_hot.hpp"

#include <cstring>

namespace stock_transforms {
namespace {

// The value of an integer scalar of any width and signedness.
int64_t integer_scalar(const DLTensor& t, const std::string& key) {
  const bool integer = (t.dtype.code == kDLInt || t.dtype.code == kDLUInt) && t.dtype.lanes == 1 &&
                       (t.dtype.bits == 8 || t.dtype.bits == 16 || t.dtype.bits == 32 || t.dtype.bits == 64);
  if (!integer || t.ndim != 0)
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "one_hot: tensor '" + key + "' must be an integer scalar, got " +
                                                         ramjet::dtype_name(t.dtype) + " with " +
                                                         std::to_string(t.ndim) + " dimensions");
  const auto* p = static_cast<const char*>(t.data) + t.byte_offset;
  const bool is_signed = t.dtype.code == kDLInt;
  switch (t.dtype.bits) {
    case 8: return is_signed ? int64_t{*reinterpret_cast<const int8_t*>(p)} : int64_t{*reinterpret_cast<const uint8_t*>(p)};
    case 16: {
      int16_t s; uint16_t u;
      std::memcpy(&s, p, 2); std::memcpy(&u, p, 2);
      return is_signed ? int64_t{s} : int64_t{u};
    }
    case 32: {
      int32_t s; uint32_t u;
      std::memcpy(&s, p, 4); std::memcpy(&u, p, 4);
      return is_signed ? int64_t{s} : int64_t{u};
    }
    default: {
      int64_t s; uint64_t u;
      std::memcpy(&s, p, 8); std::memcpy(&u, p, 8);
      if (!is_signed && u > static_cast<uint64_t>(INT64_MAX)) return -1;  // out of any valid range anyway
      return is_signed ? s : static_cast<int64_t>(u);
    }
  }
}

template <class T>
void set_one(ramjet::Tensor& out, int64_t index) { out.data<T>()[index] = T{1}; }

}  // namespace

ramjet::Fields OneHot::fields() {
  using ramjet::Field;
  return {Field::string("key").fallback("label"), Field::integer("depth").required().at_least(1),
          Field::string("dtype").one_of({"float32", "float64", "int32", "int64", "uint8"}).fallback("float32")};
}

// create() has checked the configuration against fields(); here it is only read.
OneHot::OneHot(const ramjet::Config& config) : depth_(config.get<int64_t>("depth")) {
  const nlohmann::json c = fields().with_defaults(config.json());
  key_ = c.at("key").get<std::string>();
  ramjet::parse_dtype(c.at("dtype").get<std::string>(), dtype_);
}

void OneHot::apply(ramjet::Example& example, uint64_t) const {
  const DLTensor& in = example.get(key_);
  if (in.device.device_type != kDLCPU)
    throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, "one_hot: tensor '" + key_ + "' must be on the CPU");
  const int64_t label = integer_scalar(in, key_);
  if (label < 0 || label >= depth_)
    throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, "one_hot: label " + std::to_string(label) + " in '" + key_ +
                                                     "' is outside [0, " + std::to_string(depth_) + ")");
  ramjet::Tensor out = ramjet::Tensor::zeros(dtype_, {depth_});
  using ramjet::dtype_of, ramjet::same_dtype;
  if (same_dtype(dtype_, dtype_of<float>())) set_one<float>(out, label);
  else if (same_dtype(dtype_, dtype_of<double>())) set_one<double>(out, label);
  else if (same_dtype(dtype_, dtype_of<int32_t>())) set_one<int32_t>(out, label);
  else if (same_dtype(dtype_, dtype_of<int64_t>())) set_one<int64_t>(out, label);
  else set_one<uint8_t>(out, label);
  example.set(key_, std::move(out));
}

}  // namespace stock_transforms
