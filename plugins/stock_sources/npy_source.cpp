#include "npy_source.hpp"

namespace stock_sources {

ramjet::Fields NpySource::fields() {
  using ramjet::Field;
  return {Field::object("files", ramjet::Fields().allow_unknown())
              .required()
              .rule([](const nlohmann::json& v) -> std::optional<std::string> {
                if (v.empty()) return "must name at least one tensor";
                return std::nullopt;
              })
              .doc("{\"<tensor name>\": \"<file>.npy\"}")};
}

void NpySource::check(const nlohmann::json& config, ramjet::Problems& problems) {
  for (const auto& [key, file] : config.at("files").items())
    if (!file.is_string() || file.get<std::string>().empty())
      problems.push_back({"/files/" + ramjet::pointer_token(key), "must be a .npy file path, got " + ramjet::quote_value(file)});
}

// create() has checked the configuration against fields() and check(); here the files are opened.
NpySource::NpySource(const ramjet::Config& config) {
  for (const auto& [key, file] : config.json().at("files").items()) {
    const std::string where = config.where("files/" + ramjet::pointer_token(key));
    table_.add(key, open_npy(config.resolve(file.get<std::string>())), where);
  }
}

}  // namespace stock_sources
