#include "mpi_settings.hpp"

namespace ramjet_mpi {

ramjet::Fields Settings::fields() {
  using ramjet::Field;
  return {Field::number("timeout_s").above(0).at_most(7 * 24 * 3600).fallback(kDefaultTimeoutSeconds)
              .doc("seconds a collective may wait for its peers before this rank fails and mpirun ends the job"),
          ramjet::priority_boost_field()};
}

Settings Settings::read(const ramjet::Config& config) {
  const nlohmann::json c = fields().with_defaults(config.json());
  Settings s;
  s.timeout = std::chrono::milliseconds(static_cast<int64_t>(c.at("timeout_s").get<double>() * 1000.0 + 0.5));
  s.priority_boost = c.at("priority_boost").get<int>();
  return s;
}

}  // namespace ramjet_mpi
