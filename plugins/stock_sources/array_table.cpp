#include "array_table.hpp"

namespace stock_sources {

void ArrayTable::add(std::string key, NpyArray array, const std::string& where) {
  if (!arrays_.empty() && array.count() != cardinality()) {
    const NpyArray& first = arrays_.front().second;
    throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, where + ": " + array.name + " holds " + std::to_string(array.count()) +
                                                     " examples (first axis) but " + first.name + " holds " +
                                                     std::to_string(first.count()) + "; every array needs one row per example");
  }
  arrays_.emplace_back(std::move(key), std::move(array));
}

nlohmann::json ArrayTable::element_spec() const {
  nlohmann::json spec = nlohmann::json::object();
  for (const auto& [key, array] : arrays_)
    spec[key] = {{"dtype", ramjet::dtype_name(array.header.output)}, {"shape", array.example_shape()}};
  return spec;
}

void ArrayTable::get(int64_t index, ramjet::Example& out, const char* source) const {
  if (index < 0 || index >= cardinality())
    throw ramjet::Error(RAMJET_ERR_OUT_OF_RANGE, std::string(source) + ": element " + std::to_string(index) +
                                                     " is outside [0, " + std::to_string(cardinality()) + ")");
  for (const auto& [key, array] : arrays_) out.set(key, array.example(index));
}

}  // namespace stock_sources
