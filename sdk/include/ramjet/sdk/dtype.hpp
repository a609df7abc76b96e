// DLPack dtypes: the C++ type behind each, their sizes, and the names manifests use ("float32", "uint8", ...).
#ifndef RAMJET_SDK_DTYPE_HPP
#define RAMJET_SDK_DTYPE_HPP

#include <ramjet/abi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace ramjet {

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

}  // namespace ramjet

#endif  // RAMJET_SDK_DTYPE_HPP
