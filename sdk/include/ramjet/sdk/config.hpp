// ramjet::Config: a component's JSON configuration, read from ramjet_create_info, with typed getters whose errors
// name the manifest and the JSON pointer of the field.
#ifndef RAMJET_SDK_CONFIG_HPP
#define RAMJET_SDK_CONFIG_HPP

#include <ramjet/abi.h>
#include <ramjet/sdk/error.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <exception>
#include <filesystem>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

namespace ramjet {

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

}  // namespace ramjet

#endif  // RAMJET_SDK_CONFIG_HPP
