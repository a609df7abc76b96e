#include "nccl_settings.hpp"

#include <cstdlib>

namespace ramjet_nccl {

ramjet::Fields Settings::fields() {
  ramjet::Fields fields = ramjet::net::rendezvous_fields();
  fields.add(ramjet::Field::integer("device").at_least(0).doc(
      "the CUDA device this rank drives; default: LOCAL_RANK, else the rank modulo the visible GPUs"));
  return fields;
}

void Settings::check(const nlohmann::json& config, ramjet::Problems& problems) {
  ramjet::net::check_rendezvous(config, problems);
}

Settings Settings::read(const ramjet::Config& config) {
  Settings s;
  s.rendezvous = ramjet::net::read_rendezvous(config, true);
  if (config.has("device")) {
    s.device = config.get<int>("device");
  } else if (const char* local = std::getenv("LOCAL_RANK"); local != nullptr && *local != '\0') {
    char* end = nullptr;
    const long value = std::strtol(local, &end, 10);
    if (end == local || *end != '\0' || value < 0)
      throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, config.where("device") + ": the environment's LOCAL_RANK='" +
                                                           local + "' is not a device ordinal");
    s.device = static_cast<int>(value);
  }
  return s;
}

}  // namespace ramjet_nccl
